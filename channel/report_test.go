package channel_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/tamper"
)

// TestIsDeliveryReport: by its type, or by its extension as its sender
// signed it (one added to a signed message afterwards does not count).
func TestIsDeliveryReport(t *testing.T) {
	root := tree.Root(t.TempDir())
	key, err := signing.NewKey(filepath.Join(t.TempDir(), "bob.key"), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	post := func(w channel.Writer, m channel.Message, tampered bool) channel.Message {
		t.Helper()
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		if tampered {
			tamper.Metadata(t, filepath.Join(root.Channel("dev"), m.File), func(md map[string]any) {
				md[channel.ExtDeliveryReport] = map[string]any{"state": "failed"}
			})
		}
		got, err := channel.Lookup(root, "dev", m.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	reply := channel.Message{SessionID: "dev", From: "bob", To: "alice", Content: channel.Content{Text: "done"}}
	withExt := reply
	withExt.SetExtension(channel.ExtDeliveryReport, json.RawMessage(`{"state":"failed"}`))
	typed := reply
	typed.Type = channel.TypeDeliveryReport
	signed, unsigned := channel.Writer{Root: root, Signer: key}, channel.Writer{Root: root}
	tests := []struct {
		name string
		m    channel.Message
		want bool
	}{
		{"a reply", post(signed, reply, false), false},
		{"its type", post(signed, typed, false), true},
		{"its signed extension", post(signed, withExt, false), true},
		{"an extension added to a signed reply", post(signed, reply, true), false},
		{"an extension in an unsigned message", post(unsigned, reply, true), true},
		{"a question", channel.Message{Type: channel.TypeQuestion}, false},
	}
	for _, tt := range tests {
		if got := tt.m.IsDeliveryReport(); got != tt.want {
			t.Errorf("%s: IsDeliveryReport = %v, want %v", tt.name, got, tt.want)
		}
	}
}
