package remote

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/transport/bridge"
)

// FuzzOutboxEntry: any file in the outbox lists without a panic, and one
// that is not a whole entry is marked unreadable (no Op) rather than sent.
func FuzzOutboxEntry(f *testing.F) {
	f.Add([]byte(`{"op":"post","body":{"channel":"dev","message":{}},"queued":"2026-11-25T01:00:00Z"}`))
	f.Add([]byte(`{"op":"nope","body":{}}`))
	f.Add([]byte(`{"op":"post"}`))
	f.Add([]byte("\x00{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000001-post-abcd.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		entries, err := list(dir)
		if err != nil || len(entries) != 1 {
			t.Fatalf("list: %v, %d entries", err, len(entries))
		}
		if e := entries[0]; e.Op != "" && (!bridge.KnownOp(e.Op) || len(e.Body) == 0) {
			t.Errorf("entry %+v taken as sendable", e)
		}
		_ = entries[0].Describe()
	})
}

// FuzzReadReply: any reply to a read decodes without a panic; every
// message returned has a valid id and its file name.
func FuzzReadReply(f *testing.F) {
	f.Add([]byte(`{"ok":true,"messages":[{"id":"msg-20261125-010000-a-abcd","from":"a","content":{"text":"x"}},{"id":"msg-20261125-010001-a-abcd","omitted":"2 MB"}],"more":true}`))
	f.Add([]byte(`{"ok":false,"code":"invalid"}`))
	f.Add([]byte(`{"ok":true,"messages":[1,"x",null]}`))
	f.Fuzz(func(t *testing.T, reply []byte) {
		fb := &fakeBridge{answer: func(string, []byte) ([]byte, error) { return reply, nil }}
		c, err := New(Config{Agent: "a", StateDir: t.TempDir(), Requester: fb})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Read(context.Background(), "dev", "", 0)
		if err != nil {
			return
		}
		for _, m := range p.Messages {
			if m.File != m.ID+".json" || m.SessionID != "dev" {
				t.Errorf("message %q file %q session %q", m.ID, m.File, m.SessionID)
			}
		}
	})
}
