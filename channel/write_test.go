package channel_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestPost(t *testing.T) {
	root := tree.Root(t.TempDir())
	w := &channel.Writer{Root: root, Now: fixed(time.Date(2026, 1, 11, 16, 33, 15, 123e6, time.UTC))}
	m := channel.Message{SessionID: "agent-os-paper", From: "claude", To: "codex", Content: channel.Content{Text: "hello"}}
	if err := w.Post(&m); err != nil {
		t.Fatal(err)
	}
	n, err := channel.ParseID(m.ID)
	if err != nil {
		t.Fatalf("Post chose id %q: %v", m.ID, err)
	}
	if !strings.HasPrefix(m.ID, "msg-20260111-163315-claude-") || n.Agent != "claude" {
		t.Errorf("id = %q, want msg-20260111-163315-claude-HEX4", m.ID)
	}
	if m.File != m.ID+".json" {
		t.Errorf("File = %q, want %q", m.File, m.ID+".json")
	}
	for _, f := range []struct{ name, got, want string }{
		{"timestamp", m.Timestamp, "2026-01-11T16:33:15.123Z"},
		{"type", m.Type, "chat"},
		{"metadata.mode", m.Metadata.Mode, "chat"},
		{"metadata.turn", m.Metadata.Turn, "claude"},
	} {
		if f.got != f.want {
			t.Errorf("%s = %q, want %q", f.name, f.got, f.want)
		}
	}
	path := filepath.Join(root.Channel("agent-os-paper"), m.File)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Everything collab writes carries every field of the seed schema.
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"id": m.ID, "timestamp": "2026-01-11T16:33:15.123Z", "session_id": "agent-os-paper",
		"from": "claude", "to": "codex", "type": "chat",
	} {
		if doc[k] != want {
			t.Errorf("file %s = %v, want %v", k, doc[k], want)
		}
	}
	got, err := channel.Lookup(root, "agent-os-paper", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content.Text != "hello" || got.ID != m.ID || got.To != "codex" {
		t.Errorf("Lookup = %+v", got)
	}
	names, _ := os.ReadDir(root.Channel("agent-os-paper"))
	if len(names) != 1 {
		t.Errorf("channel holds %d files, want 1 (no temp file left)", len(names))
	}
}

func TestPostDefaultsToBroadcast(t *testing.T) {
	root := tree.Root(t.TempDir())
	m := post(t, &channel.Writer{Root: root}, "general", "a", "hi all")
	if m.To != channel.Broadcast {
		t.Errorf("To = %q, want %q", m.To, channel.Broadcast)
	}
	if d := time.Since(m.Time()); d < -time.Minute || d > time.Minute {
		t.Errorf("Time() = %v, want about now", m.Time())
	}
}

// TestPostRefuses: bad names, ids and sizes are refused before anything is
// written.
func TestPostRefuses(t *testing.T) {
	ok := func() channel.Message {
		return channel.Message{SessionID: "general", From: "a", To: "b", Content: channel.Content{Text: "t"}}
	}
	tests := []struct {
		name string
		edit func(m *channel.Message)
		want error
	}{
		{"empty channel", func(m *channel.Message) { m.SessionID = "" }, tree.ErrBadName},
		{"climbing channel", func(m *channel.Message) { m.SessionID = "../../etc" }, tree.ErrBadName},
		{"dot channel", func(m *channel.Message) { m.SessionID = ".." }, tree.ErrBadName},
		{"channel with slash", func(m *channel.Message) { m.SessionID = "a/b" }, tree.ErrBadName},
		{"channel with NUL", func(m *channel.Message) { m.SessionID = "a\x00" }, tree.ErrBadName},
		{"empty from", func(m *channel.Message) { m.From = "" }, tree.ErrBadName},
		{"from with space", func(m *channel.Message) { m.From = "a b" }, tree.ErrBadName},
		{"from with slash", func(m *channel.Message) { m.From = "../x" }, tree.ErrBadName},
		{"from starting with -", func(m *channel.Message) { m.From = "-a" }, tree.ErrBadName},
		{"bad recipient", func(m *channel.Message) { m.To = "b c" }, tree.ErrBadName},
		{"bad id", func(m *channel.Message) { m.ID = "msg-../../x" }, channel.ErrNotMessageName},
		{"id with .json", func(m *channel.Message) { m.ID = "msg-20260111-163315-a-0000.json" }, channel.ErrNotMessageName},
		{"too large", func(m *channel.Message) { m.Content.Text = strings.Repeat("x", 100) }, channel.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree.Root(filepath.Join(t.TempDir(), "root"))
			m := ok()
			tt.edit(&m)
			err := (&channel.Writer{Root: root, MaxSize: 200}).Post(&m)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Post = %v, want an error wrapping %v", err, tt.want)
			}
			// Nothing but (for a size error) an empty channel folder.
			filepath.WalkDir(string(root), func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					t.Errorf("Post left %s", path)
				}
				return nil
			})
		})
	}
}

// TestPostFixedID: a message with its id set keeps it, and a clash is an
// error that leaves the existing file alone.
func TestPostFixedID(t *testing.T) {
	root := tree.Root(t.TempDir())
	w := &channel.Writer{Root: root}
	id := channel.NewID("a", t0, "0abc")
	first := channel.Message{ID: id, SessionID: "general", From: "a", Content: channel.Content{Text: "first"}}
	if err := w.Post(&first); err != nil {
		t.Fatal(err)
	}
	if first.ID != id || first.File != id+".json" {
		t.Errorf("id = %q file = %q, want %q", first.ID, first.File, id)
	}
	again := channel.Message{ID: id, SessionID: "general", From: "a", Content: channel.Content{Text: "second"}}
	if err := w.Post(&again); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Post with the same id = %v, want fs.ErrExist", err)
	}
	got, err := channel.Lookup(root, "general", id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content.Text != "first" {
		t.Errorf("text = %q, want the first message kept", got.Content.Text)
	}
}

// TestPostPicksNewNameOnClash fills half of one second's names for one
// agent; posts in that second must pick free names and never replace a
// file.
func TestPostPicksNewNameOnClash(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	dir := root.Channel(ch)
	taken := make(map[string]bool)
	first := filepath.Join(dir, fileName("a", t0, "0000"))
	writeFile(t, first, []byte("taken"))
	for h := 2; h < 1<<16; h += 2 {
		// Links are cheaper to make than files.
		name := fileName("a", t0, fmtHex(uint16(h)))
		if err := os.Link(first, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		taken[name] = true
	}
	taken[filepath.Base(first)] = true
	var calls atomic.Int64
	w := &channel.Writer{Root: root, Now: func() time.Time { calls.Add(1); return t0 }}
	const posts = 64
	for i := range posts {
		m := post(t, w, ch, "a", fmt.Sprintf("post %d", i))
		if taken[m.File] {
			t.Fatalf("Post %d used the taken name %s", i, m.File)
		}
		if got, err := channel.Lookup(root, ch, m.ID); err != nil || got.Content.Text != m.Content.Text {
			t.Fatalf("Post %d: Lookup(%s) = %q, %v", i, m.ID, got.Content.Text, err)
		}
		taken[m.File] = true
	}
	// Post reads the clock once per try: the extra reads are clashes. With
	// half the names taken, 64 posts without a clash would happen with
	// probability 2^-64.
	if clashes := calls.Load() - posts; clashes == 0 {
		t.Error("no clash happened; the test did not exercise the retry")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(entries), 1<<15+posts; got != want {
		t.Errorf("channel holds %d files, want %d", got, want)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temp file %s left", e.Name())
		}
	}
	if data, err := os.ReadFile(first); err != nil || string(data) != "taken" {
		t.Errorf("a taken name was overwritten: %q, %v", data, err)
	}
}

// TestConcurrentWritersAndReader: 8 writers post into one channel, all in
// the same second under the same agent name so that name clashes are
// forced, while a Reader scans in a loop. Every message is returned exactly
// once, whole, with its own content.
func TestConcurrentWritersAndReader(t *testing.T) {
	writers, perWriter := 8, 1000
	if testing.Short() {
		perWriter = 200
	}
	total := writers * perWriter
	const ch = "load"
	root := tmpfsRoot(t)

	// Each writer's clock is frozen at t0 and counts its reads: Post reads
	// it once per name it tries, so reads beyond one per message are
	// clashes.
	var clockReads atomic.Int64
	payload := func(w, i int) string { return strings.Repeat(fmt.Sprintf("<w%d-%d>", w, i), 40) }

	// Retries: 1 reports a file the first time it does not parse, so a
	// partial message that was visible for a single scan is caught.
	r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	var (
		done     = make(chan struct{})
		readerWG sync.WaitGroup
		got      []channel.Message
		skips    []channel.Skip
		scanErr  error
		scans    int
	)
	readerWG.Go(func() {
		deadline := time.Now().Add(2 * time.Minute)
		finished := false
		for len(got) < total && time.Now().Before(deadline) {
			select {
			case <-done:
				finished = true
			default:
			}
			msgs, sk, err := r.Scan()
			scans++
			if err != nil {
				scanErr = err
				return
			}
			got = append(got, msgs...)
			skips = append(skips, sk...)
			if finished && len(msgs) == 0 {
				return // everything is written and a scan found nothing new
			}
		}
	})

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			cw := &channel.Writer{Root: root, Now: func() time.Time { clockReads.Add(1); return t0 }}
			for i := range perWriter {
				m := channel.Message{
					SessionID: ch, From: "bot",
					Content:  channel.Content{Text: fmt.Sprintf("w%d-%d", w, i)},
					Metadata: channel.Metadata{Extra: map[string]json.RawMessage{"payload": json.RawMessage(`"` + payload(w, i) + `"`)}},
				}
				code := payload(w, i)
				m.Content.Code = &code
				if err := cw.Post(&m); err != nil {
					t.Errorf("writer %d, message %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readerWG.Wait()
	if scanErr != nil {
		t.Fatalf("Scan: %v", scanErr)
	}
	t.Logf("%d messages, %d scans, %d name clashes", total, scans, clockReads.Load()-int64(total))

	if len(skips) != 0 {
		t.Errorf("the reader skipped %d files, e.g. %v: a partial message was visible", len(skips), skips[0])
	}
	if clashes := clockReads.Load() - int64(total); clashes <= 0 {
		t.Errorf("no name clash in %d posts to one second; the test did not force any", total)
	}
	seenText := make(map[string]int, total)
	seenID := make(map[string]bool, total)
	for _, m := range got {
		seenText[m.Content.Text]++
		if seenID[m.ID] {
			t.Errorf("message %s returned twice", m.ID)
		}
		seenID[m.ID] = true
		var w, i int
		if _, err := fmt.Sscanf(m.Content.Text, "w%d-%d", &w, &i); err != nil {
			t.Errorf("unexpected text %q", m.Content.Text)
			continue
		}
		if m.Content.Code == nil || *m.Content.Code != payload(w, i) {
			t.Errorf("%s (%s): code is not its own payload: an overwrite or a mix", m.ID, m.Content.Text)
		}
		var p string
		if err := json.Unmarshal(m.Metadata.Extra["payload"], &p); err != nil || p != payload(w, i) {
			t.Errorf("%s (%s): metadata.payload is not its own payload", m.ID, m.Content.Text)
		}
		n, err := channel.ParseName(m.File)
		if err != nil || !n.Time.Equal(t0) || n.Agent != "bot" || m.ID+".json" != m.File {
			t.Errorf("%s: name %q, want one in the frozen second from bot", m.ID, m.File)
		}
	}
	missing := 0
	for w := range writers {
		for i := range perWriter {
			switch c := seenText[fmt.Sprintf("w%d-%d", w, i)]; {
			case c == 0:
				missing++
			case c > 1:
				t.Errorf("w%d-%d returned %d times", w, i, c)
			}
		}
	}
	if missing > 0 || len(got) != total {
		t.Errorf("the reader returned %d messages, %d missing, want %d", len(got), missing, total)
	}
	entries, err := os.ReadDir(root.Channel(ch))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != total {
		var odd []string
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "msg-") {
				odd = append(odd, e.Name())
			}
		}
		t.Errorf("channel holds %d files, want %d; non-messages: %q", len(entries), total, odd[:min(len(odd), 5)])
	}
	// A fresh reader finds the same set in channel order.
	all, sk, err := channel.ReadAll(root, ch, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != total || len(sk) != 0 {
		t.Errorf("ReadAll: %d messages, %d skips; want %d, 0", len(all), len(sk), total)
	}
	if !slices.IsSortedFunc(all, func(a, b channel.Message) int { return strings.Compare(a.File, b.File) }) {
		t.Error("ReadAll is not in name order within one second and equal timestamps")
	}
}
