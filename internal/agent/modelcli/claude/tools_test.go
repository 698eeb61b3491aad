package claude

import (
	"slices"
	"testing"
)

func TestToolArgs(t *testing.T) {
	tests := []struct {
		name        string
		tools       []string
		allowed     []string
		deny, allow []string // among the denied, must be / must not be
	}{
		{"none", nil, nil, nil, nil},
		{"read only", []string{"Read", "Grep", "Glob"}, []string{"Read", "Grep", "Glob"}, []string{"Bash", "Edit", "Write", "WebFetch", "Task"}, []string{"Read", "Grep", "Glob"}},
		{"a rule keeps its tool", []string{"Bash(git diff:*)"}, []string{"Bash(git diff:*)"}, []string{"Edit", "Read"}, []string{"Bash"}},
		{"an mcp tool", []string{"mcp__collab__channel_send"}, []string{"mcp__collab__channel_send"}, []string{"Bash", "Read"}, nil},
		{"every built-in", BuiltinTools, BuiltinTools, nil, BuiltinTools},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ToolArgs(tt.tools)
			if tt.tools == nil {
				if got != nil {
					t.Fatalf("ToolArgs(nil) = %q", got)
				}
				return
			}
			if got[0] != "--allowedTools" || !slices.Equal(got[1:1+len(tt.allowed)], tt.allowed) {
				t.Fatalf("ToolArgs(%q) = %q", tt.tools, got)
			}
			rest := got[1+len(tt.allowed):]
			if len(rest) > 0 && rest[0] != "--disallowedTools" {
				t.Fatalf("after the allowed: %q", rest)
			}
			for _, d := range tt.deny {
				if !slices.Contains(rest, d) {
					t.Errorf("%s not denied: %q", d, got)
				}
			}
			for _, a := range tt.allow {
				if slices.Contains(rest, a) {
					t.Errorf("%s denied: %q", a, got)
				}
			}
		})
	}
	// The arguments are a command line Claude Code takes: each list is
	// followed by another flag or by nothing.
	a := &Adapter{Args: ToolArgs([]string{"Read"})}
	argv, err := a.argv("", nil)
	if err != nil || argv[len(argv)-1] == "--disallowedTools" || !slices.Contains(argv, "--disallowedTools") {
		t.Errorf("argv %q, %v", argv, err)
	}
}
