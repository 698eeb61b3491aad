package delivery

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/tamper"
)

// TestIsNoticeSigned: a guard extension makes a message a notice (which
// no watcher answers and send --wait passes over) only as its sender
// wrote it: one added to a signed reply after signing leaves it a reply.
func TestIsNoticeSigned(t *testing.T) {
	root := tree.Root(t.TempDir())
	bob, err := signing.NewKey(filepath.Join(t.TempDir(), "bob.key"), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	// post writes m with w and returns it as read back, after edit
	// (when set) changed the file as another account could.
	post := func(w channel.Writer, m channel.Message, edit func(md map[string]any)) channel.Message {
		t.Helper()
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root.Channel("dev"), m.File)
		if edit != nil {
			tamper.Metadata(t, path, edit)
		}
		got, err := channel.Lookup(root, "dev", m.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	reply := channel.Message{SessionID: "dev", From: "bob", To: "alice", Content: channel.Content{Text: "done"}}
	reply.Metadata.InReplyTo = "msg-20260111-120000-alice-0001"
	notice := reply
	notice.SetExtension(ExtGuard, json.RawMessage(`"max-hops"`))
	addGuard := func(md map[string]any) { md[ExtGuard] = GuardMaxHops }
	signed, unsigned := channel.Writer{Root: root, Signer: bob}, channel.Writer{Root: root}

	tests := []struct {
		name string
		m    channel.Message
		want bool
	}{
		{"a signed reply", post(signed, reply, nil), false},
		{"a signed reply, guard added", post(signed, reply, addGuard), false},
		{"a signed notice by its guard extension", post(signed, notice, nil), true},
		{"an unsigned reply, guard added", post(unsigned, reply, addGuard), true},
		{"type notice", channel.Message{From: "bob", Type: NoticeType}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsNotice(&tt.m); got != tt.want {
				t.Errorf("IsNotice = %v, want %v", got, tt.want)
			}
		})
	}
}
