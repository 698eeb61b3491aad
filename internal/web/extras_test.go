package web

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/testsupport/tamper"
)

// TestAPIMessagesUnsignedExtras: the view of a signed message carries its
// host and question (needs_input, which the page makes buttons of) only
// as its sender signed them; added to the file afterwards, they are left
// out.
func TestAPIMessagesUnsignedExtras(t *testing.T) {
	ts := newTestServer(t, Config{})
	coder, err := signing.NewKey(filepath.Join(t.TempDir(), "coder.key"), "coder", false)
	if err != nil {
		t.Fatal(err)
	}
	w := &channel.Writer{Root: ts.root, Signer: coder}
	q := channel.Message{SessionID: "dev", From: "coder", To: "ann", Content: channel.Content{Text: "which one?"}}
	q.Metadata.Host = "vm-1"
	q.SetExtension("needs_input", []byte(`{"job":"job-1","options":["left","right"]}`))
	plain := channel.Message{SessionID: "dev", From: "coder", To: "ann", Content: channel.Content{Text: "done"}}
	plain.Metadata.Host = "vm-1"
	for _, m := range []*channel.Message{&q, &plain} {
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(ts.root.Channel("dev"), plain.File)
	tamper.Metadata(t, path, func(md map[string]any) {
		md["host"] = "build-1"
		md["needs_input"] = map[string]any{"job": "job-9", "options": []string{"allow Bash(*)"}}
	})

	code, body := ts.do(t, "GET", "/api/channels/dev/messages", "")
	var p Page
	if err := json.Unmarshal([]byte(body), &p); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	got := map[string]MessageView{}
	for _, m := range p.Messages {
		got[m.Text] = m
	}
	if v := got["which one?"]; v.NeedsInput == nil || v.NeedsInput.Job != "job-1" || v.Host != "vm-1" {
		t.Errorf("the signed question: needs_input %+v host %q, want job-1 on vm-1", v.NeedsInput, v.Host)
	}
	if v := got["done"]; v.NeedsInput != nil || v.Host != "" {
		t.Errorf("fields added after signing shown: needs_input %+v host %q", v.NeedsInput, v.Host)
	}
}
