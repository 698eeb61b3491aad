package channel_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
)

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func postAt(t *testing.T, root tree.Root, ch, text string, at time.Time) channel.Message {
	t.Helper()
	w := &channel.Writer{Root: root, Now: func() time.Time { return at }}
	m := &channel.Message{SessionID: ch, From: "a", Content: channel.Content{Text: text}}
	if err := w.Post(m); err != nil {
		t.Fatal(err)
	}
	return *m
}

func scanN(t *testing.T, r *channel.Reader) int {
	t.Helper()
	msgs, _, err := r.Scan()
	if err != nil {
		t.Fatal(err)
	}
	return len(msgs)
}

// An idle channel is not listed once its folder's attributes have settled,
// but is listed again after FullRescan, after a change, and on Invalidate.
func TestScanGate(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := &clock{t: time.Now()}
	postAt(t, root, "c", "one", clk.Now())
	r, err := channel.NewReader(root, "c", channel.Cursor{}, channel.ReaderOptions{Now: clk.Now, Settle: 2 * time.Second, FullRescan: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if n := scanN(t, r); n != 1 {
		t.Fatalf("first scan: %d messages", n)
	}
	clk.Add(time.Second)
	scanN(t, r) // within Settle: lists
	clk.Add(2 * time.Second)
	scanN(t, r) // Settle after the stamp appeared: lists, and trusts from now
	base := channel.Listings(r)
	for range 5 {
		clk.Add(time.Second)
		scanN(t, r)
	}
	if got := channel.Listings(r) - base; got != 0 {
		t.Errorf("idle: %d listings in 5 scans, want 0", got)
	}

	postAt(t, root, "c", "two", clk.Now())
	if n := scanN(t, r); n != 1 {
		t.Errorf("after a new message: %d messages, want 1", n)
	}

	base = channel.Listings(r)
	r.Invalidate()
	scanN(t, r)
	if channel.Listings(r) != base+1 {
		t.Errorf("Invalidate did not make the next scan list")
	}

	clk.Add(3 * time.Second)
	scanN(t, r)
	base = channel.Listings(r)
	clk.Add(31 * time.Second)
	scanN(t, r)
	if channel.Listings(r) != base+1 {
		t.Errorf("no listing after FullRescan")
	}
}

// A file waiting for a retry keeps the folder listed.
func TestScanGateRetry(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := &clock{t: time.Now()}
	dir := root.Channel("c")
	os.MkdirAll(dir, 0o777)
	r, _ := channel.NewReader(root, "c", channel.Cursor{}, channel.ReaderOptions{Now: clk.Now, Retries: 100})
	for range 3 {
		scanN(t, r)
		clk.Add(2 * time.Second)
	}
	name := channel.NewID("a", clk.Now(), "abcd") + ".json"
	full := `{"from":"a","content":{"text":"late"}}`
	os.WriteFile(filepath.Join(dir, name), []byte(full[:10]), 0o666) // a writer mid-write, in place
	scanN(t, r)
	for range 5 {
		clk.Add(10 * time.Second)
		scanN(t, r)
	}
	// Completed in place: the folder's attributes do not change.
	os.WriteFile(filepath.Join(dir, name), []byte(full), 0o666)
	clk.Add(time.Second)
	if n := scanN(t, r); n != 1 {
		t.Errorf("completed file: %d messages, want 1", n)
	}
}

// Across mounts with cached folder attributes, a hinted name is read at
// once; unhinted, the file is found by the periodic full listing.
func TestScanHintAcrossMounts(t *testing.T) {
	backing := t.TempDir()
	reader := tree.Root(bindfstest.Mount(t, backing, "-o", "attr_timeout=30,entry_timeout=30,negative_timeout=0"))
	writer := tree.Root(bindfstest.Mount(t, backing))
	os.MkdirAll(reader.Channel("c"), 0o777)
	clk := &clock{t: time.Now()}
	r, _ := channel.NewReader(reader, "c", channel.Cursor{}, channel.ReaderOptions{Now: clk.Now})
	for range 3 {
		scanN(t, r)
		clk.Add(2 * time.Second)
	}
	m := postAt(t, writer, "c", "hinted", time.Now())
	r.Hint(m.File)
	msgs, _, err := r.Scan()
	if err != nil || len(msgs) != 1 || msgs[0].Content.Text != "hinted" {
		t.Fatalf("hinted scan: %v %v; want the hinted message", msgs, err)
	}
	m2 := postAt(t, writer, "c", "unhinted", time.Now())
	clk.Add(31 * time.Second)
	msgs, _, _ = r.Scan()
	if len(msgs) != 1 || msgs[0].File != m2.File {
		t.Errorf("after FullRescan: %v; want %s", msgs, m2.File)
	}
}

func TestHintNeverAppears(t *testing.T) {
	root := tree.Root(t.TempDir())
	os.MkdirAll(root.Channel("c"), 0o777)
	clk := &clock{t: time.Now()}
	r, _ := channel.NewReader(root, "c", channel.Cursor{}, channel.ReaderOptions{Now: clk.Now, HintTTL: time.Minute})
	for range 3 {
		scanN(t, r)
		clk.Add(2 * time.Second)
	}
	ghost := channel.NewID("x", clk.Now(), "0000") + ".json"
	r.Hint(ghost)
	r.Hint("not-a-message.txt") // ignored
	if _, skips, _ := r.Scan(); len(skips) != 0 {
		t.Fatalf("skips before HintTTL: %v", skips)
	}
	clk.Add(2 * time.Minute)
	_, skips, _ := r.Scan()
	if len(skips) != 1 || skips[0].File != ghost || skips[0].Reason != channel.SkipNeverAppeared {
		t.Errorf("skips = %v; want one %q for %s", skips, channel.SkipNeverAppeared, ghost)
	}
	if _, skips, _ := r.Scan(); len(skips) != 0 {
		t.Errorf("reported again: %v", skips)
	}
}

// Across mounts with a 30 s attribute cache, the gate still sees another
// host's write at the next scan: the folder's stamp comes from the server,
// not the cache, so the folder is listed without waiting for FullRescan
// or a hint; and nothing is missed, however the writes fall between scans.
func TestScanGateAcrossMounts(t *testing.T) {
	backing := t.TempDir()
	reader := tree.Root(bindfstest.Mount(t, backing, "-o", "attr_timeout=30,entry_timeout=30,negative_timeout=0"))
	writer := tree.Root(bindfstest.Mount(t, backing))
	os.MkdirAll(reader.Channel("c"), 0o777)
	clk := &clock{t: time.Now()}
	r, _ := channel.NewReader(reader, "c", channel.Cursor{}, channel.ReaderOptions{Now: clk.Now, Settle: 2 * time.Second, FullRescan: time.Hour})
	settle := func() {
		t.Helper()
		for range 3 {
			scanN(t, r)
			clk.Add(2 * time.Second)
		}
		base := channel.Listings(r)
		scanN(t, r)
		if channel.Listings(r) != base {
			t.Fatalf("an idle, settled folder was listed")
		}
	}
	settle()
	sent := map[string]bool{}
	for round := range 5 {
		// One message, then (round > 0) several within one second.
		for range 1 + round {
			m := postAt(t, writer, "c", "m", time.Now())
			sent[m.File] = true
		}
		msgs, _, err := r.Scan()
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1+round {
			t.Errorf("round %d: the next scan returned %d messages, want %d", round, len(msgs), 1+round)
		}
		for _, m := range msgs {
			if !sent[m.File] {
				t.Errorf("round %d: %s returned twice or never sent", round, m.File)
			}
			delete(sent, m.File)
		}
		settle()
	}
	if len(sent) != 0 {
		t.Errorf("never returned: %v", sent)
	}
}

// A message written in place slowly (no temp file) fails to decode while
// half written; once whole it is read within a couple of scans, though the
// folder's attributes did not change and no full listing is due.
func TestScanRereadsFileWrittenInPlace(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := &clock{t: time.Now()}
	postAt(t, root, "c", "one", clk.Now())
	r, err := channel.NewReader(root, "c", channel.Cursor{}, channel.ReaderOptions{Now: clk.Now, Settle: 2 * time.Second, FullRescan: 30 * time.Second, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := scanN(t, r); n != 1 {
		t.Fatalf("first scan: %d messages", n)
	}
	whole := postAt(t, root, "c", "two", clk.Now())
	path := filepath.Join(root.Channel("c"), whole.ID+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil { // half written, in place
		t.Fatal(err)
	}
	for range 4 { // the half file is reported, the folder settles
		clk.Add(time.Second)
		scanN(t, r)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0) // the writer finishes, in place
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.Chtimes(path, clk.Now(), clk.Now().Add(time.Second))
	got := 0
	for range 2 {
		clk.Add(time.Second)
		got += scanN(t, r)
	}
	if got != 1 {
		t.Errorf("the message finished in place: %d messages within two scans, want 1", got)
	}
}

// TestScanHintedRereadsFileWrittenInPlace: a file found malformed while it
// was being written in place, hinted again when the write wakes the reader
// (fsnotify's Write), is read by that hinted scan, not the next listing.
func TestScanHintedRereadsFileWrittenInPlace(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := &clock{t: time.Now()}
	postAt(t, root, "c", "one", clk.Now())
	r, err := channel.NewReader(root, "c", channel.Cursor{}, channel.ReaderOptions{Now: clk.Now, Settle: 2 * time.Second, FullRescan: time.Hour, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := scanN(t, r); n != 1 {
		t.Fatalf("first scan: %d messages", n)
	}
	whole := postAt(t, root, "c", "two", clk.Now())
	path := filepath.Join(root.Channel("c"), whole.ID+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil { // created, not written yet
		t.Fatal(err)
	}
	r.Hint(whole.ID + ".json")
	if msgs, skips, err := r.ScanHinted(); err != nil || len(msgs) != 0 || len(skips) != 1 {
		t.Fatalf("hinted scan of the empty file: %d messages, skips %v, err %v; want one skip", len(msgs), skips, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil { // the writer finishes, in place
		t.Fatal(err)
	}
	os.Chtimes(path, clk.Now(), clk.Now().Add(time.Second))
	r.Hint(whole.ID + ".json")
	msgs, _, err := r.ScanHinted()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("hinted scan after the write: %d messages, err %v; want 1", len(msgs), err)
	}
}

// A message that appears named further back than the reader's floor (its
// writer's clock far behind) is reported once with SkipBehind; the ones
// there before the reader started are not.
func TestScanReportsBehindFloor(t *testing.T) {
	root := tree.Root(t.TempDir())
	now := time.Now()
	postAt(t, root, "c", "old", now.Add(-3*time.Hour))
	r, err := channel.NewReader(root, "c", channel.Cursor{Floor: now.Add(-time.Hour)}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, skips, err := r.Scan(); err != nil || len(skips) != 0 {
		t.Fatalf("first scan: skips %v, err %v; want none", skips, err)
	}
	late := postAt(t, root, "c", "late", now.Add(-2*time.Hour))
	var got []channel.Skip
	for range 3 {
		r.Invalidate()
		msgs, skips, err := r.Scan()
		if err != nil || len(msgs) != 0 {
			t.Fatalf("scan: %d messages, err %v", len(msgs), err)
		}
		got = append(got, skips...)
	}
	if len(got) != 1 || got[0].Reason != channel.SkipBehind || got[0].File != late.ID+".json" {
		t.Errorf("skips %+v, want the late file once with reason %q", got, channel.SkipBehind)
	}
}
