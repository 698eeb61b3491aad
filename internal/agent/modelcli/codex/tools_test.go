package codex

import "testing"

func TestToolArgs(t *testing.T) {
	if got := ToolArgs([]string{"shell"}); got != nil {
		t.Errorf("ToolArgs = %q: codex exec has no flag for it", got)
	}
	if ToolLimits == "" {
		t.Error("no ToolLimits to warn with")
	}
}
