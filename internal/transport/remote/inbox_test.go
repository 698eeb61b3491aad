package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

// TestUnreadPagesAndAck: Unread pages the whole channel through the
// bridge (more than one reply), then only what AckUntil left unread;
// AckUntil counts what it acknowledged and refuses an id not in the
// channel.
func TestUnreadPagesAndAck(t *testing.T) {
	root, url, signer := bridgeOnLoopback(t)
	c := dialAs(t, url, "a", signer)
	w := channel.Writer{Root: root}
	n := bridge.MaxReadLimit + 20
	for i := range n {
		to := "a"
		if i == 0 {
			to = "b"
		}
		if err := w.Post(&channel.Message{SessionID: "dev", From: "m", To: to, Content: channel.Content{Text: fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	msgs, _, err := c.Unread(ctx, "dev")
	if err != nil || len(msgs) != n {
		t.Fatalf("Unread: %d messages, %v", len(msgs), err)
	}
	got, err := c.AckUntil(ctx, "dev", msgs[n-3].ID)
	if err != nil || got != n-3 {
		t.Fatalf("AckUntil: %d, %v; want %d (all but the one for b)", got, err, n-3)
	}
	left, _, err := c.Unread(ctx, "dev")
	if err != nil || len(left) != 2 || left[0].ID != msgs[n-2].ID || left[1].ID != msgs[n-1].ID {
		t.Fatalf("after AckUntil: %d messages, %v", len(left), err)
	}
	if got, err := c.AckUntil(ctx, "dev", msgs[1].ID); err != nil || got != 0 {
		t.Errorf("AckUntil of an acknowledged id: %d, %v; want 0", got, err)
	}
	unknown := channel.NewID("zz", time.Now(), "0000")
	if _, err := c.AckUntil(ctx, "dev", unknown); !errors.Is(err, inbox.ErrUnknownMessage) {
		t.Errorf("AckUntil of an id not in the channel: %v", err)
	}
	if _, err := c.AckUntil(ctx, "dev", "not-an-id"); err == nil || errors.Is(err, inbox.ErrUnknownMessage) {
		t.Errorf("AckUntil of a bad id: %v", err)
	}
	if err := c.Acknowledge("../x", []string{left[0].ID}); err == nil {
		t.Error("Acknowledge of a bad channel name")
	}
	if err := c.Acknowledge("dev", []string{"not-an-id"}); err == nil {
		t.Error("Acknowledge of a bad id")
	}
	if n, err := c.AckUntil(ctx, "dev", left[1].ID); err != nil || n != 2 {
		t.Errorf("AckUntil of the newest: %d, %v", n, err)
	}
	if left, _, err := c.Unread(ctx, "dev"); err != nil || len(left) != 0 {
		t.Errorf("all acknowledged: %d unread, %v", len(left), err)
	}
}

// TestUnreadLateMessage: a message named before one acknowledged that
// lands later (its writer's clock behind) is still unread, within the
// skew window; one named further back is not. The cursor survives a
// restart (a new client on the same state dir).
func TestUnreadLateMessage(t *testing.T) {
	root, url, signer := bridgeOnLoopback(t)
	state := t.TempDir()
	dial := func() *Client {
		c, err := Dial(context.Background(), natsbus.Options{URL: url}, Config{Agent: "a", Signer: signer, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	ctx := context.Background()
	c := dial()
	now := time.Now()
	post := func(at time.Time, text string) string {
		t.Helper()
		m := channel.Message{SessionID: "dev", From: "m", To: "a", Content: channel.Content{Text: text}}
		w := channel.Writer{Root: root, Now: func() time.Time { return at }}
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	unread := func(c *Client) []string {
		t.Helper()
		msgs, _, err := c.Unread(ctx, "dev")
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, m := range msgs {
			texts = append(texts, m.Content.Text)
		}
		return texts
	}
	first := post(now, "first")
	if got := unread(c); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("unread %q", got)
	}
	if err := c.Acknowledge("dev", []string{first}); err != nil {
		t.Fatal(err)
	}
	post(now.Add(-5*time.Minute), "late")
	post(now.Add(-2*channel.DefaultSkewWindow), "too late")
	if got := unread(c); !slices.Equal(got, []string{"late"}) {
		t.Fatalf("unread %q; want the late message only (named before the acknowledged one, within the skew window)", got)
	}
	c2 := dial()
	if got := unread(c2); !slices.Equal(got, []string{"late"}) {
		t.Fatalf("after a restart: unread %q", got)
	}
	data, err := os.ReadFile(filepath.Join(state, InboxDir, "dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ Version int }
	cur, err := inbox.DecodeCursor(data)
	if err != nil || json.Unmarshal(data, &s) != nil || s.Version != 1 || !slices.Contains(cur.Seen, first+".json") {
		t.Fatalf("cursor file %s: %v", data, err)
	}
	if n, err := c2.AckUntil(ctx, "dev", first); err != nil || n != 1 {
		t.Fatalf("AckUntil: %d, %v; want the late one", n, err)
	}
	if got := unread(c2); len(got) != 0 {
		t.Fatalf("unread %q after AckUntil", got)
	}
}

// TestOldInboxCursor: a cursor file of the first format ({"after": ID})
// loads as everything up to ID read, and is rewritten in the new one.
func TestOldInboxCursor(t *testing.T) {
	root, url, signer := bridgeOnLoopback(t)
	c := dialAs(t, url, "a", signer)
	base := time.Now().Add(-time.Minute).Truncate(time.Second)
	var ids []string
	for i := range 3 {
		m := channel.Message{SessionID: "dev", From: "m", To: "a", Content: channel.Content{Text: fmt.Sprint(i)}}
		w := channel.Writer{Root: root, Now: func() time.Time { return base.Add(time.Duration(i) * time.Second) }}
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	dir := filepath.Join(c.cfg.StateDir, InboxDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf(`{"after": %q, "saved": "2026-01-01T00:00:00Z"}`, ids[1])
	if err := os.WriteFile(filepath.Join(dir, "dev.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	msgs, _, err := c.Unread(ctx, "dev")
	if err != nil || len(msgs) != 1 || msgs[0].ID != ids[2] {
		t.Fatalf("Unread with an old cursor: %d messages, %v; want the last", len(msgs), err)
	}
	if err := c.Acknowledge("dev", []string{ids[2]}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := inbox.DecodeCursor(data)
	if err != nil || !slices.Contains(cur.Seen, ids[1]+".json") || !slices.Contains(cur.Seen, ids[2]+".json") {
		t.Fatalf("rewritten cursor %s: %v", data, err)
	}
	if msgs, _, err := c.Unread(ctx, "dev"); err != nil || len(msgs) != 0 {
		t.Fatalf("Unread: %d, %v", len(msgs), err)
	}
}
