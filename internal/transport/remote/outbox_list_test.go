package remote

import (
	"encoding/json"
	"strings"
	"testing"
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
