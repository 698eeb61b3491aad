package remote

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
)

// TestListingJSON: outbox ls --json's shape: both lists always present,
// each entry with its file's name and nothing escaped for HTML.
func TestListingJSON(t *testing.T) {
	l, err := List(t.TempDir())
	if err != nil || !l.Empty() {
		t.Fatalf("List of an empty state = %+v, %v", l, err)
	}
	data, err := json.Marshal(l)
	if err != nil || string(data) != `{"failed":[],"waiting":[]}` {
		t.Errorf("empty listing: %s, %v", data, err)
	}
	l.Failed = []Entry{{Name: "e1.json", Op: "post", Body: json.RawMessage(`{}`), Refused: "a <refusal>"}}
	var b strings.Builder
	enc := json.NewEncoder(&b) // as the command prints it
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil || !strings.Contains(b.String(), `"file":"e1.json"`) || !strings.Contains(b.String(), `"refused":"a <refusal>"`) {
		t.Errorf("listing: %s, %v", b.String(), err)
	}
}

// TestListingLinesAndQueued: outbox ls's lines, the waiting first, a
// refused one with its reason, what came from a file made printable;
// Queued is errkind.Queued while writes wait and nil once flushed.
func TestListingLinesAndQueued(t *testing.T) {
	state := t.TempDir()
	f := &fakeBridge{answer: down}
	c := newTestClient(t, f, state)
	if _, err := c.Post(context.Background(), msg("hi")); !errors.Is(err, ErrQueued) {
		t.Fatal(err)
	}
	if err := c.Queued(); !errkind.Is(err, errkind.Queued) || !strings.Contains(err.Error(), "1 write(s) still waiting") {
		t.Errorf("Queued with one waiting: %v", err)
	}
	l, err := List(state)
	if err != nil {
		t.Fatal(err)
	}
	l.Failed = []Entry{{Op: "post\n", Body: json.RawMessage(`{}`), Refused: "bad\tkey"}}
	lines := l.Lines()
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "waiting  post  dev ") || !strings.HasPrefix(lines[1], "failed  post") ||
		strings.ContainsAny(lines[1], "\n\t") || !strings.Contains(lines[1], "bad") {
		t.Errorf("Lines = %q", lines)
	}
	f.answer = ok
	c.Flush(context.Background())
	if err := c.Queued(); err != nil {
		t.Errorf("Queued once flushed: %v", err)
	}
}
