package inbox

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// postAs writes a message to codex in dev at base+sec with the sender's
// priority p ("" for none).
func postAs(t *testing.T, root, text string, p Priority, sec int) channel.Message {
	t.Helper()
	at := base.Add(time.Duration(sec) * time.Second)
	w := &channel.Writer{Root: tree.Root(root), Now: func() time.Time { return at }}
	m := &channel.Message{SessionID: "dev", From: "claude", To: "codex", Content: channel.Content{Text: text}}
	if p != "" {
		SetPriority(m, p)
	}
	if err := w.Post(m); err != nil {
		t.Fatal(err)
	}
	return *m
}

// TestInboxPriorityOrder: the inbox lists high before normal before low,
// each oldest first, in Peek, PeekNewest (the newest by time, then
// ordered) and Check.
func TestInboxPriorityOrder(t *testing.T) {
	root := t.TempDir()
	low1 := postAs(t, root, "when you have time", Low, 1)
	n1 := postAs(t, root, "please look", "", 2)
	h1 := postAs(t, root, "urgent: the build is red", "", 3)
	low2 := postAs(t, root, "urgent words, but the sender says low", Low, 4)
	n2 := postAs(t, root, "and this", Normal, 5)
	h2 := postAs(t, root, "now", High, 6)

	b := newInbox(t, root, "codex")
	got, err := b.Peek()
	if err != nil {
		t.Fatal(err)
	}
	want(t, "Peek", got, h1, h2, n1, n2, low1, low2)
	for _, it := range got {
		if it.Priority != PriorityOf(&it.Message) {
			t.Errorf("%s: priority %s, PriorityOf %s", it.Message.ID, it.Priority, PriorityOf(&it.Message))
		}
	}
	newest, more, err := b.PeekNewest(3)
	if err != nil || more != 3 {
		t.Fatalf("PeekNewest(3): more %d, %v", more, err)
	}
	want(t, "PeekNewest(3)", newest, h2, n2, low2)
	got, err = b.Check()
	if err != nil {
		t.Fatal(err)
	}
	want(t, "Check", got, h1, h2, n1, n2, low1, low2)
}

func TestSenderPriority(t *testing.T) {
	tests := []struct {
		name string
		ext  string // the extension's raw JSON; "" for none
		text string
		want Priority
	}{
		{"none", "", "please look", Normal},
		{"low", `"low"`, "please look", Low},
		{"low beats urgent words", `"low"`, "urgent!", Low},
		{"high", `"high"`, "please look", High},
		{"normal beats urgent words", `"normal"`, "urgent!", Normal},
		{"unknown: detected", `"top"`, "urgent!", High},
		{"not a string: detected", `2`, "please look", Normal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := channel.Message{From: "gemini", To: "codex", Content: channel.Content{Text: tt.text}}
			if tt.ext != "" {
				m.SetExtension(ExtPriority, json.RawMessage(tt.ext))
			}
			if got := PriorityOf(&m); got != tt.want {
				t.Errorf("PriorityOf = %s, want %s", got, tt.want)
			}
		})
	}
}

func FuzzParsePriority(f *testing.F) {
	for _, s := range []string{"high", "normal", "low", "", "HIGH", "urgent"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePriority(s)
		if err == nil && string(p) != s {
			t.Errorf("ParsePriority(%q) = %q", s, p)
		}
		if err == nil && (p.Rank() < 0 || p.Rank() > 2) {
			t.Errorf("rank of %q: %d", p, p.Rank())
		}
	})
}
