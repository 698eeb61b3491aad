package remote

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/transport/bridge"
)

// fakeBridge is a Requester whose answers a test chooses.
type fakeBridge struct {
	mu     sync.Mutex
	answer func(subject string, data []byte) ([]byte, error)
	sent   []string // subjects, in order
	posted []string // ids of the posts answered ok
}

func (f *fakeBridge) Request(_ context.Context, subject string, data []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, subject)
	out, err := f.answer(subject, data)
	if err == nil && strings.Contains(string(out), `"ok":true`) && strings.Contains(subject, ".post.") {
		var r bridge.PostRequest
		if json.Unmarshal(data, &r) == nil {
			m, _ := channel.Decode(r.Message, "", r.Channel)
			f.posted = append(f.posted, m.ID)
		}
	}
	return out, err
}

func ok(string, []byte) ([]byte, error)   { return []byte(`{"ok":true}`), nil }
func down(string, []byte) ([]byte, error) { return nil, nats.ErrNoResponders }
func refuse(code string) func(string, []byte) ([]byte, error) {
	return func(string, []byte) ([]byte, error) {
		return []byte(`{"ok":false,"code":"` + code + `","error":"no"}`), nil
	}
}

// clock is a fake clock that moves a millisecond per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func newTestClient(t *testing.T, f *fakeBridge, state string) *Client {
	t.Helper()
	signer, err := signing.NewKey(filepath.Join(t.TempDir(), "a.key"), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	ck := &clock{t: time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)}
	c, err := New(Config{Agent: "a", Signer: signer, StateDir: state, Requester: f, Now: ck.now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func msg(text string) *channel.Message {
	return &channel.Message{SessionID: "dev", To: "b", Content: channel.Content{Text: text}}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if !de.IsDir() {
			out = append(out, de.Name())
		}
	}
	return out
}

func TestPost(t *testing.T) {
	for _, tc := range []struct {
		name           string
		answer         func(string, []byte) ([]byte, error)
		queued         bool   // the error wraps ErrQueued and the entry stays
		refused        string // the code; the entry is in failed/
		outbox, failed int
	}{
		{name: "ok", answer: ok},
		{name: "existed", answer: func(string, []byte) ([]byte, error) { return []byte(`{"ok":true,"existed":true}`), nil }},
		{name: "no bridge", answer: down, queued: true, outbox: 1},
		{name: "timeout", answer: func(string, []byte) ([]byte, error) { return nil, context.DeadlineExceeded }, queued: true, outbox: 1},
		{name: "unavailable", answer: refuse(bridge.CodeUnavailable), queued: true, outbox: 1},
		{name: "internal", answer: refuse(bridge.CodeInternal), queued: true, outbox: 1},
		{name: "forbidden", answer: refuse(bridge.CodeForbidden), refused: bridge.CodeForbidden, failed: 1},
		{name: "conflict", answer: refuse(bridge.CodeConflict), refused: bridge.CodeConflict, failed: 1},
		{name: "invalid", answer: refuse(bridge.CodeInvalid), refused: bridge.CodeInvalid, failed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			f := &fakeBridge{answer: tc.answer}
			c := newTestClient(t, f, state)
			id, err := c.Post(context.Background(), msg("hello"))
			if got, want := errors.Is(err, ErrQueued), tc.queued; got != want {
				t.Fatalf("Post: %v; queued %v, want %v", err, got, want)
			}
			var be *bridge.Error
			if tc.refused != "" {
				if !errors.As(err, &be) || be.Code != tc.refused {
					t.Fatalf("Post: %v, want a %s refusal", err, tc.refused)
				}
			} else if !tc.queued && err != nil {
				t.Fatalf("Post: %v", err)
			}
			if _, perr := channel.ParseID(id); perr != nil {
				t.Errorf("id %q: %v", id, perr)
			}
			tries := 1
			if tc.refused == bridge.CodeConflict {
				tries += maxRenames // a new id each time
			}
			if got := f.sent; len(got) != tries || got[0] != "collab.bridge.v1.post.a" {
				t.Errorf("sent %v, want %d posts on a's subject", got, tries)
			}
			box := filepath.Join(state, OutboxDir)
			if got := names(t, box); len(got) != tc.outbox {
				t.Errorf("outbox %v, want %d entries", got, tc.outbox)
			}
			if got := names(t, filepath.Join(box, FailedDir)); len(got) != tc.failed {
				t.Errorf("failed %v, want %d entries", got, tc.failed)
			}
			if tc.queued {
				var qe *QueuedError
				if !errors.As(err, &qe) || !strings.HasPrefix(qe.Path, box+"/") {
					t.Fatalf("error %v does not name the entry", err)
				}
				if _, err := os.Stat(qe.Path); err != nil {
					t.Error(err)
				}
			}
			if tc.refused != "" {
				fl, _ := c.Failed()
				if len(fl) != 1 || !strings.Contains(fl[0].Refused, tc.refused) || fl[0].Describe() != "dev "+id {
					t.Errorf("failed entries %+v", fl)
				}
			}
		})
	}
}

// The entry is in the outbox, whole, while the request is sent; a crash
// then (the process gone before the reply) leaves it, and the next
// client's flush sends the same bytes.
func TestCrashBetweenWriteAndSend(t *testing.T) {
	state := t.TempDir()
	box := filepath.Join(state, OutboxDir)
	var sentBody []byte
	f := &fakeBridge{answer: func(_ string, data []byte) ([]byte, error) {
		entries, err := list(box)
		if err != nil || len(entries) != 1 || string(entries[0].Body) != string(data) {
			t.Errorf("while sending, the outbox holds %+v (%v), want this request", entries, err)
		}
		sentBody = data
		return nil, context.Canceled // the process is killed here
	}}
	c := newTestClient(t, f, state)
	id, err := c.Post(context.Background(), msg("survives"))
	if !errors.Is(err, ErrQueued) {
		t.Fatalf("Post: %v, want queued", err)
	}
	for _, n := range names(t, box) {
		if strings.HasPrefix(n, ".") {
			t.Errorf("temp file left: %s", n)
		}
	}
	fi, err := os.Stat(filepath.Join(box, names(t, box)[0]))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("entry %v, %v: want mode 0600", fi, err)
	}

	var again []byte
	f2 := &fakeBridge{answer: func(_ string, data []byte) ([]byte, error) { again = data; return ok("", nil) }}
	c2 := newTestClient(t, f2, state)
	res := c2.Flush(context.Background())
	if res.Err != nil || len(res.Sent) != 1 || res.Left != 0 {
		t.Fatalf("Flush: %+v", res)
	}
	if string(again) != string(sentBody) {
		t.Errorf("the flush sent other bytes than the first try")
	}
	if got := f2.posted; len(got) != 1 || got[0] != id {
		t.Errorf("posted %v, want [%s]", got, id)
	}
	if got := names(t, box); len(got) != 0 {
		t.Errorf("outbox %v after the flush", got)
	}
}

func TestFlushOrder(t *testing.T) {
	state := t.TempDir()
	f := &fakeBridge{answer: down}
	c := newTestClient(t, f, state)
	var ids []string
	for _, text := range []string{"one", "two", "three"} {
		id, err := c.Post(context.Background(), msg(text))
		if !errors.Is(err, ErrQueued) {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if res := c.Flush(context.Background()); res.Left != 3 || !errors.Is(res.Err, ErrQueued) || len(f.sent) != 4 {
		t.Fatalf("Flush with the bridge down: %+v after %d requests; want 3 left after one try", res, len(f.sent))
	}
	// The bridge comes back, answers the first, then is gone again.
	n := 0
	f.answer = func(s string, d []byte) ([]byte, error) {
		n++
		if n == 2 {
			return down(s, d)
		}
		return ok(s, d)
	}
	res := c.Flush(context.Background())
	if len(res.Sent) != 1 || res.Left != 2 {
		t.Fatalf("Flush: %+v, want 1 sent and 2 left", res)
	}
	res = c.Flush(context.Background())
	if len(res.Sent) != 2 || res.Left != 0 || res.Err != nil {
		t.Fatalf("Flush: %+v, want the 2 left sent", res)
	}
	if got, want := strings.Join(f.posted, ","), strings.Join(ids, ","); got != want {
		t.Errorf("posted %s, want oldest first %s", got, want)
	}
	if e, _ := c.Outbox(); len(e) != 0 {
		t.Errorf("outbox %+v", e)
	}
}

func TestFlushRefusedAndUnreadable(t *testing.T) {
	state := t.TempDir()
	f := &fakeBridge{answer: down}
	c := newTestClient(t, f, state)
	if _, err := c.Post(context.Background(), msg("forged?")); !errors.Is(err, ErrQueued) {
		t.Fatal(err)
	}
	box := filepath.Join(state, OutboxDir)
	if err := os.WriteFile(filepath.Join(box, "00000000000000000001-post-zzzz.json"), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(box, ".00000000000000000002-post-tmp.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.answer = refuse(bridge.CodeForbidden)
	res := c.Flush(context.Background())
	if len(res.Refused) != 2 || res.Left != 0 || len(res.Sent) != 0 {
		t.Fatalf("Flush: %+v, want 2 refused", res)
	}
	if got := len(f.sent); got != 2 { // the bad entry is never sent
		t.Errorf("%d requests, want 2", got)
	}
	if got := names(t, box); len(got) != 1 || !strings.HasPrefix(got[0], ".") {
		t.Errorf("outbox %v: want only the temp file", got)
	}
	if got := names(t, filepath.Join(box, FailedDir)); len(got) != 2 {
		t.Errorf("failed %v", got)
	}
}

func TestNoKey(t *testing.T) {
	state := t.TempDir()
	f := &fakeBridge{answer: ok}
	c, err := New(Config{Agent: "a", StateDir: state, Requester: f})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Post(context.Background(), msg("x")); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Post without a key: %v", err)
	}
	if len(f.sent) != 0 || len(names(t, filepath.Join(state, OutboxDir))) != 0 {
		t.Error("something was queued or sent")
	}
	signer, err := signing.NewKey(filepath.Join(t.TempDir(), "b.key"), "b", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Agent: "a", Signer: signer, StateDir: state, Requester: f}); err == nil {
		t.Error("a client of a with b's key")
	}
}

func TestPostSigns(t *testing.T) {
	var got channel.Message
	f := &fakeBridge{answer: func(_ string, data []byte) ([]byte, error) {
		var r bridge.PostRequest
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, err
		}
		var err error
		got, err = channel.Decode(r.Message, "", r.Channel)
		return []byte(`{"ok":true}`), err
	}}
	c := newTestClient(t, f, t.TempDir())
	m := msg("signed")
	m.From = "someone-else" // Post acts as the client's agent only
	id, err := c.Post(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.From != "a" || got.Signature == nil || got.SessionID != "dev" {
		t.Errorf("posted %+v", got)
	}
}

func TestDedup(t *testing.T) {
	d := newDedup(2)
	for i, tc := range []struct {
		id  string
		new bool
	}{{"x", true}, {"x", false}, {"y", true}, {"z", true}, {"y", false}, {"x", true}} {
		if got := d.add(tc.id); got != tc.new {
			t.Errorf("%d: add(%s) = %v", i, tc.id, got)
		}
	}
}

func TestDefaultStateDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"xdg", map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/collab/remote/a"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.local/state/collab/remote/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DefaultStateDir("a", func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := DefaultStateDir("a", func(string) string { return "" }); got != "" && !filepath.IsAbs(got) {
		t.Errorf("no home: %q, want an absolute path or none", got)
	}
}

// A post whose id another message already has (a conflict) is sealed
// again under a new id, its entry replaced, and sent: never lost to
// failed/ for a name clash.
func TestPostConflictRenames(t *testing.T) {
	state := t.TempDir()
	conflicts := 2
	f := &fakeBridge{answer: func(s string, d []byte) ([]byte, error) {
		if conflicts > 0 {
			conflicts--
			return refuse(bridge.CodeConflict)(s, d)
		}
		return ok(s, d)
	}}
	c := newTestClient(t, f, state)
	m := msg("clash")
	id, err := c.Post(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.sent) != 3 || len(f.posted) != 1 || f.posted[0] != id || m.ID != id || m.Signature == nil {
		t.Errorf("sent %d, posted %v, returned %s, message %s", len(f.sent), f.posted, id, m.ID)
	}
	if e, _ := c.Outbox(); len(e) != 0 {
		t.Errorf("outbox %+v", e)
	}
	if e, _ := c.Failed(); len(e) != 0 {
		t.Errorf("failed %+v", e)
	}
	// Without end: after maxRenames new ids, failed/.
	f.answer = refuse(bridge.CodeConflict)
	if _, err := c.Post(context.Background(), msg("always")); err == nil || errors.Is(err, ErrQueued) {
		t.Fatalf("Post: %v, want a refusal", err)
	}
	if e, _ := c.Failed(); len(e) != 1 {
		t.Errorf("failed %+v, want the post", e)
	}
}

// A post queued without Renew (a watcher's reply, which the mirror
// carries under the id its reply token reserved) refused as a conflict is
// never sealed again under a new id: that would be a second reply. It goes
// to failed/ as it was.
func TestReplyConflictKeepsID(t *testing.T) {
	state := t.TempDir()
	f := &fakeBridge{answer: refuse(bridge.CodeConflict)}
	c := newTestClient(t, f, state)
	w := channel.Writer{Signer: c.cfg.Signer}
	m := msg("a reply")
	m.From = "a"
	data, err := w.Seal(m)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(bridge.PostRequest{Channel: m.SessionID, Message: data})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.box.add(bridge.OpPost, body, false); err != nil {
		t.Fatal(err)
	}
	res := c.Flush(context.Background())
	if len(res.Refused) != 1 {
		t.Fatalf("flush: %+v, want one refusal", res)
	}
	if len(f.sent) != 1 {
		t.Errorf("sent %d requests, want 1 (no renamed copy)", len(f.sent))
	}
	failed, _ := c.Failed()
	if len(failed) != 1 || postID(failed[0]) != m.ID {
		t.Errorf("failed %+v, want the reply under its own id %s", failed, m.ID)
	}
}
