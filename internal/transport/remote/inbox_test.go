package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"collab/channel"
	"collab/internal/transport/bridge"
)

// TestUnreadPagesAndAck: Unread pages the whole channel through the
// bridge (more than one reply), then only what came after the cursor Ack
// wrote in the state dir.
func TestUnreadPagesAndAck(t *testing.T) {
	root, url, signer := bridgeOnLoopback(t)
	c := dialAs(t, url, "a", signer)
	w := channel.Writer{Root: root}
	n := bridge.MaxReadLimit + 20
	for i := range n {
		if err := w.Post(&channel.Message{SessionID: "dev", From: "m", To: "a", Content: channel.Content{Text: fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	msgs, last, _, err := c.Unread(ctx, "dev")
	if err != nil || len(msgs) != n || last != msgs[n-1].ID {
		t.Fatalf("Unread: %d messages, last %q, %v", len(msgs), last, err)
	}
	if err := c.Ack("dev", msgs[n-3].ID); err != nil {
		t.Fatal(err)
	}
	msgs, _, _, err = c.Unread(ctx, "dev")
	if err != nil || len(msgs) != 2 {
		t.Fatalf("after Ack: %d messages, %v", len(msgs), err)
	}
	if err := c.Ack("../x", last); err == nil {
		t.Error("Ack of a bad channel name")
	}
	if err := c.Ack("dev", "not-an-id"); err == nil {
		t.Error("Ack of a bad id")
	}
}

// FuzzInboxCursor: any cursor file is read as a message id or refused.
func FuzzInboxCursor(f *testing.F) {
	for _, s := range []string{`{"after":"msg-20260101-000000-a-0000"}`, `{}`, `{"after":"../x"}`, `[]`, "", "\xff"} {
		f.Add([]byte(s))
	}
	state := f.TempDir()
	c, err := New(Config{Agent: "a", StateDir: state, Requester: offline{}})
	if err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(state, InboxDir), 0o700); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(state, InboxDir, "dev.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		id, err := c.inboxCursor("dev")
		if err == nil && id != "" {
			if _, perr := channel.ParseID(id); perr != nil {
				t.Fatalf("cursor %q accepted", id)
			}
		}
	})
}
