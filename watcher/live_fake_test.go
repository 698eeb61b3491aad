package watcher_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// fakeLive is a LiveRunner over a fakeRunner: it records each turn's key.
type fakeLive struct {
	*fakeRunner
	mu   sync.Mutex
	keys []string
}

func (f *fakeLive) Turn(ctx context.Context, key string, req modelcli.Request) (modelcli.Response, error) {
	f.mu.Lock()
	f.keys = append(f.keys, key)
	f.mu.Unlock()
	return f.Run(ctx, req)
}

// TestLivePrompts: with Config.Live, a keyed message runs as a live turn;
// a later turn's prompt carries only what is new, unless the last turn
// failed or the session could not be resumed (the run that starts afresh
// gets the whole prompt).
func TestLivePrompts(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	var mode atomic.Value // what the next turn does: "fail", "gone" or ""
	mode.Store("")
	perMessage := &fakeRunner{}
	lv := &fakeLive{fakeRunner: &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		switch mode.Load() {
		case "fail":
			return modelcli.Response{Session: "s-1"}, errors.New("boom")
		case "gone":
			if c.Req.Session == "" {
				break
			}
			return modelcli.Response{}, modelcli.ErrSessionGone
		}
		return modelcli.Response{Text: "reply to " + c.msgID(), Session: "s-1"}, nil
	}}}
	cfg := config(root, perMessage)
	cfg.Live = lv
	start(t, cfg)

	full := func(p string) bool { return strings.Contains(p, "# How to answer") }
	for i, tt := range []struct {
		text, mode string
		wantFull   []bool // per call
	}{
		{"first", "", []bool{true}},
		{"second", "", []bool{false}},
		{"please fail now", "fail", []bool{false}},
		{"after the failure", "", []bool{true}},
		{"gone now", "gone", []bool{false, true}},
		{"after the new session", "", []bool{false}},
	} {
		mode.Store(tt.mode)
		m := send(t, root, agent, tt.text)
		waitClaim(t, root, agent, m.ID)
		cs := lv.callsFor(m.ID)
		if len(cs) != len(tt.wantFull) {
			t.Fatalf("message %d %q: %d calls, want %d", i, tt.text, len(cs), len(tt.wantFull))
		}
		for k, c := range cs {
			if got := full(c.Req.Prompt); got != tt.wantFull[k] {
				t.Errorf("message %d %q, call %d: whole prompt %v, want %v:\n%s", i, tt.text, k, got, tt.wantFull[k], c.Req.Prompt)
			}
			if !strings.Contains(c.Req.Prompt, tt.text) {
				t.Errorf("message %d: the prompt lacks the message", i)
			}
		}
	}
	if n := len(perMessage.Calls()); n != 0 {
		t.Errorf("the per-message runner ran %d times, want 0", n)
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	for _, k := range lv.keys {
		if k != chName {
			t.Errorf("turn key %q, want %q", k, chName)
		}
	}
}
