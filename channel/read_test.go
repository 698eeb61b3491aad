package channel_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestScanReturnsEachMessageOnceInOrder(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	dir := root.Channel(ch)
	// Name time first, then the JSON timestamp, then the name.
	for _, f := range []struct {
		name string
		ts   string
		text string
	}{
		{fileName("bob", t0.Add(2*time.Second), "0000"), "", "5 third second, name bob"},
		{fileName("bob", t0, "0001"), "2026-01-11T12:00:00.900Z", "3 late in the first second"},
		{fileName("zed", t0, "0000"), "2026-01-11T12:00:00.100Z", "1 early in the first second"},
		{fileName("amy", t0, "0002"), "2026-01-11T12:00:00.500Z", "2 mid first second"},
		{fileName("amy", t0.Add(2*time.Second), "0001"), "", "4 third second, name amy"},
		{fileName("amy", t0.Add(time.Second), "ffff"), "2027-01-01T00:00:00Z", "3b second second, odd timestamp"},
	} {
		var m map[string]any
		json.Unmarshal(messageJSON("x", f.text), &m)
		if f.ts != "" {
			m["timestamp"] = f.ts
		}
		data, _ := json.Marshal(m)
		writeFile(t, filepath.Join(dir, f.name), data)
	}
	r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msgs, skips := scan(t, r)
	if len(skips) != 0 {
		t.Errorf("skips = %v", skips)
	}
	want := []string{
		"1 early in the first second", "2 mid first second", "3 late in the first second",
		"3b second second, odd timestamp", "4 third second, name amy", "5 third second, name bob",
	}
	if got := texts(msgs); !slices.Equal(got, want) {
		t.Errorf("order:\ngot  %q\nwant %q", got, want)
	}
	for _, m := range msgs {
		if m.SessionID != ch || m.ID+".json" != m.File || m.To != "all" || m.Type != "chat" {
			t.Errorf("defaults not filled in: %+v", m)
		}
	}
	for i := range 3 {
		if msgs, skips := scan(t, r); len(msgs)+len(skips) != 0 {
			t.Errorf("scan %d again: %q, %v; want nothing", i+2, texts(msgs), skips)
		}
	}
	writeFile(t, filepath.Join(dir, fileName("bob", t0.Add(time.Minute), "0000")), messageJSON("bob", "new"))
	if msgs, _ := scan(t, r); !slices.Equal(texts(msgs), []string{"new"}) {
		t.Errorf("after one more message: %q, want [new]", texts(msgs))
	}
}

func TestScanMissingChannel(t *testing.T) {
	root := tree.Root(t.TempDir())
	r, err := channel.NewReader(root, "nothing-yet", channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msgs, skips, err := r.Scan()
	if msgs != nil || skips != nil || err != nil {
		t.Errorf("Scan of a missing channel = %v, %v, %v; want nothing", msgs, skips, err)
	}
	if _, err := os.Stat(root.Channels()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Scan created %s", root.Channels())
	}
	// The folder appears later: its messages are found.
	post(t, &channel.Writer{Root: root}, "nothing-yet", "a", "first")
	if msgs, _ := scan(t, r); !slices.Equal(texts(msgs), []string{"first"}) {
		t.Errorf("Scan = %q, want [first]", texts(msgs))
	}
}

func TestNewReaderBadChannel(t *testing.T) {
	root := tree.Root(t.TempDir())
	for _, name := range []string{"", "..", "../x", "a/b", "-x", ".hidden", "a b"} {
		if _, err := channel.NewReader(root, name, channel.Cursor{}, channel.ReaderOptions{}); !errors.Is(err, tree.ErrBadName) {
			t.Errorf("NewReader(%q) = %v, want ErrBadName", name, err)
		}
		if _, _, err := channel.ReadAll(root, name, channel.ReaderOptions{}); !errors.Is(err, tree.ErrBadName) {
			t.Errorf("ReadAll(%q) = %v, want ErrBadName", name, err)
		}
	}
}

func TestSeekEnd(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	w := &channel.Writer{Root: root, Now: fixed(t0)}
	post(t, w, ch, "a", "old 1")
	post(t, w, ch, "a", "old 2")
	r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SeekEnd(); err != nil {
		t.Fatal(err)
	}
	post(t, w, ch, "a", "new")
	if msgs, _ := scan(t, r); !slices.Equal(texts(msgs), []string{"new"}) {
		t.Errorf("after SeekEnd: %q, want [new]", texts(msgs))
	}
}

// TestClockSkew: a message whose name is older than one already returned
// (its writer's clock is slow) is still returned, once.
func TestClockSkew(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{Now: fixed(t0)})
	if err != nil {
		t.Fatal(err)
	}
	post(t, &channel.Writer{Root: root, Now: fixed(t0)}, ch, "fast", "now")
	if msgs, _ := scan(t, r); !slices.Equal(texts(msgs), []string{"now"}) {
		t.Fatalf("first scan: %q, want [now]", texts(msgs))
	}
	slow := &channel.Writer{Root: root, Now: fixed(t0.Add(-5 * time.Minute))}
	post(t, slow, ch, "slow", "5 minutes ago")
	if msgs, _ := scan(t, r); !slices.Equal(texts(msgs), []string{"5 minutes ago"}) {
		t.Fatalf("after a slow writer: %q, want [5 minutes ago]", texts(msgs))
	}
	if msgs, _ := scan(t, r); len(msgs) != 0 {
		t.Fatalf("third scan: %q, want nothing", texts(msgs))
	}
	// A slow writer even further behind, still within the live reader's
	// memory: returned too.
	post(t, &channel.Writer{Root: root, Now: fixed(t0.Add(-3 * time.Hour))}, ch, "slower", "3 hours ago")
	if msgs, _ := scan(t, r); !slices.Equal(texts(msgs), []string{"3 hours ago"}) {
		t.Fatalf("after a very slow writer: %q, want [3 hours ago]", texts(msgs))
	}
}

// TestCursorRestore: a Reader restored from a persisted Cursor returns a
// message named 5 minutes before the newest one seen, and none of the
// messages already returned.
func TestCursorRestore(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	opt := channel.ReaderOptions{Now: fixed(t0)}
	r, err := channel.NewReader(root, ch, channel.Cursor{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range []time.Time{t0.Add(-2 * time.Hour), t0.Add(-10 * time.Minute), t0.Add(-5 * time.Minute), t0} {
		post(t, &channel.Writer{Root: root, Now: fixed(at)}, ch, "a", fmt.Sprintf("seen %d", i))
	}
	if msgs, _ := scan(t, r); len(msgs) != 4 {
		t.Fatalf("first scan returned %q, want 4 messages", texts(msgs))
	}
	// Persist and restore the cursor as a watcher would.
	data, err := json.Marshal(r.Cursor())
	if err != nil {
		t.Fatal(err)
	}
	var cur channel.Cursor
	if err := json.Unmarshal(data, &cur); err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(-channel.DefaultSkewWindow); !cur.Floor.Equal(want) {
		t.Errorf("Cursor().Floor = %v, want the newest name minus the skew window, %v", cur.Floor, want)
	}
	if len(cur.Seen) != 3 {
		t.Errorf("Cursor().Seen = %q, want the 3 names within the skew window", cur.Seen)
	}

	post(t, &channel.Writer{Root: root, Now: fixed(t0.Add(-5 * time.Minute))}, ch, "slow", "5 minutes behind")
	r2, err := channel.NewReader(root, ch, cur, opt)
	if err != nil {
		t.Fatal(err)
	}
	if msgs, skips := scan(t, r2); !slices.Equal(texts(msgs), []string{"5 minutes behind"}) || len(skips) != 0 {
		t.Errorf("restored reader: %q, %v; want only [5 minutes behind]", texts(msgs), skips)
	}
	if msgs, _ := scan(t, r2); len(msgs) != 0 {
		t.Errorf("restored reader, second scan: %q, want nothing", texts(msgs))
	}
	// The cursor of the restored reader keeps its position.
	r3, err := channel.NewReader(root, ch, r2.Cursor(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _ := scan(t, r3); len(msgs) != 0 {
		t.Errorf("reader restored twice: %q, want nothing", texts(msgs))
	}
}

// TestCursorFutureWriter: a writer whose clock runs 2 hours fast must not
// push the floor past messages written at the reader's "now".
func TestCursorFutureWriter(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	opt := channel.ReaderOptions{Now: fixed(t0)}
	r, err := channel.NewReader(root, ch, channel.Cursor{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	post(t, &channel.Writer{Root: root, Now: fixed(t0.Add(2 * time.Hour))}, ch, "fast", "from the future")
	scan(t, r)
	cur := r.Cursor()
	if want := t0.Add(-channel.DefaultSkewWindow); !cur.Floor.Equal(want) {
		t.Errorf("Floor = %v, want now minus the skew window, %v", cur.Floor, want)
	}
	post(t, &channel.Writer{Root: root, Now: fixed(t0.Add(-30 * time.Minute))}, ch, "slow", "half an hour ago")
	r2, err := channel.NewReader(root, ch, cur, opt)
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _ := scan(t, r2); !slices.Equal(texts(msgs), []string{"half an hour ago"}) {
		t.Errorf("restored reader: %q, want [half an hour ago]", texts(msgs))
	}
}

// TestCursorBelowFloor documents the limit of a restored Reader: a message
// named further behind than the skew window is below its floor.
func TestCursorBelowFloor(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	opt := channel.ReaderOptions{Now: fixed(t0), SkewWindow: time.Minute}
	r, err := channel.NewReader(root, ch, channel.Cursor{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	post(t, &channel.Writer{Root: root, Now: fixed(t0)}, ch, "a", "now")
	scan(t, r)
	post(t, &channel.Writer{Root: root, Now: fixed(t0.Add(-5 * time.Minute))}, ch, "slow", "too old")
	post(t, &channel.Writer{Root: root, Now: fixed(t0.Add(-30 * time.Second))}, ch, "slow", "just in")
	r2, err := channel.NewReader(root, ch, r.Cursor(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _ := scan(t, r2); !slices.Equal(texts(msgs), []string{"just in"}) {
		t.Errorf("restored reader: %q, want [just in]", texts(msgs))
	}
}

// badFile is a file dropped into a channel by something other than collab.
type badFile struct {
	name   string
	make   func(t *testing.T, path string)
	reason channel.SkipReason // "": ignored silently
}

// TestBadInput fills a channel with garbage next to good messages. Over
// several scans nothing crashes or hangs, the good messages are returned
// once, each bad file is reported exactly once with the right reason, the
// in-flight files are ignored silently, and nothing outside ROOT is read.
func TestBadInput(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	dir := root.Channel(ch)

	// A valid message outside ROOT, which a symlink points to.
	outside := t.TempDir()
	const secret = "TOP-SECRET-6f1d"
	secretFile := filepath.Join(outside, "secret.json")
	writeFile(t, secretFile, messageJSON("mallory", secret))
	if err := os.Mkdir(filepath.Join(outside, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outside, "dir", "x"), []byte(secret))

	name := func(hex4 string) string { return fileName("x", t0, hex4) }
	content := func(data []byte) func(*testing.T, string) {
		return func(t *testing.T, path string) { writeFile(t, path, data) }
	}
	symlink := func(target string) func(*testing.T, string) {
		return func(t *testing.T, path string) {
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}
	}
	big := bytes.Repeat([]byte("a"), 5<<20)
	bigMessage := messageJSON("x", string(big))

	files := []badFile{
		{name("0001"), content(nil), channel.SkipMalformed},
		{name("0002"), content([]byte("hello, world")), channel.SkipMalformed},
		{name("0003"), content([]byte(`{"from":"x"}`)), channel.SkipMalformed},
		{name("0004"), content([]byte(`{"content":{"text":"no sender"}}`)), channel.SkipMalformed},
		{name("0005"), content([]byte(`[1,2,3]`)), channel.SkipMalformed},
		{name("0006"), content([]byte("\xff\xfe{\x00")), channel.SkipMalformed},
		{name("0007"), content(bigMessage), channel.SkipTooLarge},
		{name("0008"), content(big), channel.SkipTooLarge},
		{name("0009"), func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(path, "inner.json"), messageJSON("x", "inside a directory"))
		}, channel.SkipNotRegular},
		{name("000a"), symlink(secretFile), channel.SkipSymlink},
		{name("000b"), symlink(filepath.Join(outside, "dir")), channel.SkipSymlink},
		{name("000c"), symlink("../../../../../../../../etc/passwd"), channel.SkipSymlink},
		{name("000d"), symlink(name("good")), channel.SkipSymlink}, // dangling, inside
		{name("000e"), func(t *testing.T, path string) {
			if err := unix.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, channel.SkipNotRegular},
		{name("000f"), func(t *testing.T, path string) {
			// /dev/null's numbers: a device must not be read either.
			// Without CAP_MKNOD, a FIFO stands in for it.
			if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
				if err := unix.Mkfifo(path, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, channel.SkipNotRegular},

		// In-flight writes and dot-files: ignored silently, even when valid.
		{"." + name("0010"), content(messageJSON("x", "dot-file")), ""},
		{"." + name("0011") + ".a1b2c3d4.tmp", content(messageJSON("x", "temp file")), ""},
		{name("0012") + ".tmp", content(messageJSON("x", "tmp suffix")), ""},
		{".hidden", content([]byte("junk")), ""},
		{"junk.tmp", content([]byte("junk")), ""},
		{".dotdir", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, ""},

		// Names that do not match: reported once, never read.
		{"README.md", content([]byte("hello")), channel.SkipName},
		{"notes.json", content(messageJSON("x", "wrong name")), channel.SkipName},
		{"msg-bad.json", content(messageJSON("x", "wrong name")), channel.SkipName},
		{"msg-20261311-120000-x-0001.json", content(messageJSON("x", "month 13")), channel.SkipName},
		{"msg-20260111-120000-a b-0001.json", content(messageJSON("x", "space")), channel.SkipName},
		{"msg-20260111-120000-x-0001.JSON", content(messageJSON("x", "upper case")), channel.SkipName},
		{"msg-20260111-120000-x-0001.json~", content(messageJSON("x", "backup")), channel.SkipName},
		{"subdir", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, channel.SkipName},
		{"link-out", symlink(secretFile), channel.SkipName},
	}
	for _, f := range files {
		f.make(t, filepath.Join(dir, f.name))
	}
	// A fresh file's atime equals its mtime, so under relatime (and
	// strictatime) its first read moves the atime: an unchanged atime
	// after the scans shows the reader never read it.
	atime := func(path string) unix.Timespec {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Atim
	}
	outsideFiles := []string{secretFile, filepath.Join(outside, "dir", "x")}
	atimes := make([]unix.Timespec, len(outsideFiles))
	for i, path := range outsideFiles {
		atimes[i] = atime(path)
	}
	good := []string{"good one", "good two"}
	writeFile(t, filepath.Join(dir, fileName("alice", t0, "a001")), messageJSON("alice", good[0]))
	writeFile(t, filepath.Join(dir, fileName("bob", t0.Add(time.Second), "b002")), messageJSON("bob", good[1]))

	r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		got      []channel.Message
		reported = map[string][]channel.SkipReason{}
	)
	for range channel.DefaultRetries + 3 {
		msgs, skips := scan(t, r)
		got = append(got, msgs...)
		for _, s := range skips {
			reported[s.File] = append(reported[s.File], s.Reason)
		}
	}
	if !slices.Equal(texts(got), good) {
		t.Errorf("returned %q, want %q", texts(got), good)
	}
	for _, m := range got {
		data, _ := m.Encode()
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("a returned message carries the content of a file outside ROOT: %s", data)
		}
	}
	for i, path := range outsideFiles {
		if got := atime(path); got != atimes[i] {
			t.Errorf("%s outside ROOT was read (its atime moved)", path)
		}
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			got := reported[f.name]
			delete(reported, f.name)
			switch {
			case f.reason == "" && len(got) > 0:
				t.Errorf("reported %q, want it ignored silently", got)
			case f.reason != "" && !slices.Equal(got, []channel.SkipReason{f.reason}):
				t.Errorf("reported %q, want exactly once %q", got, f.reason)
			}
		})
	}
	for name, reasons := range reported {
		t.Errorf("unexpected report for %s: %q", name, reasons)
	}

	// The channel still works: a new message is returned, nothing reported
	// again.
	writeFile(t, filepath.Join(dir, fileName("carol", t0.Add(time.Minute), "c003")), messageJSON("carol", "after the junk"))
	msgs, skips := scan(t, r)
	if !slices.Equal(texts(msgs), []string{"after the junk"}) || len(skips) != 0 {
		t.Errorf("next scan: %q, %v; want only [after the junk]", texts(msgs), skips)
	}

	// ReadAll, the one-pass reader, agrees.
	all, skips, err := channel.ReadAll(root, ch, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(good), "after the junk"); !slices.Equal(texts(all), want) {
		t.Errorf("ReadAll = %q, want %q", texts(all), want)
	}
	if len(skips) == 0 {
		t.Error("ReadAll reported no skips")
	}
}

// TestMalformedCompletedInPlace: a foreign writer writes a message in
// place, so a scan can see it truncated. It is returned once complete,
// whether that happens before it is reported malformed or after.
func TestMalformedCompletedInPlace(t *testing.T) {
	full := messageJSON("foreign", "written in place")
	truncated := full[:len(full)-7]
	// Garbage of the full message's size: completing it leaves the size
	// alone, so only the mtime tells the change.
	sameSize := append([]byte("{"), bytes.Repeat([]byte(" "), len(full)-1)...)
	tests := []struct {
		name         string
		partial      []byte
		scansBefore  int  // scans of the partial file
		wantReported bool // reported malformed before it was completed
		complete     func(t *testing.T, path string)
	}{
		{"completed after one scan", truncated, 1, false, appendRest(full)},
		{"completed just before retries run out", truncated, channel.DefaultRetries - 1, false, appendRest(full)},
		{"completed after being reported", truncated, channel.DefaultRetries + 2, true, appendRest(full)},
		{"rewritten at the same size after being reported", sameSize, channel.DefaultRetries + 2, true,
			func(t *testing.T, path string) {
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, path, full)
				// A coarse clock could leave the mtime as it was.
				later := fi.ModTime().Add(time.Second)
				if err := os.Chtimes(path, later, later); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const ch = "general"
			root := newRoot(t, ch)
			path := filepath.Join(root.Channel(ch), fileName("foreign", t0, "0001"))
			writeFile(t, path, tt.partial)
			r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var reported []channel.Skip
			for i := range tt.scansBefore {
				msgs, skips := scan(t, r)
				if len(msgs) != 0 {
					t.Fatalf("scan %d returned %q from a partial file", i+1, texts(msgs))
				}
				reported = append(reported, skips...)
			}
			if got := len(reported); tt.wantReported && (got != 1 || reported[0].Reason != channel.SkipMalformed) {
				t.Fatalf("before completion: reported %v, want one %q", reported, channel.SkipMalformed)
			} else if !tt.wantReported && got != 0 {
				t.Fatalf("reported %v within the retries, want nothing yet", reported)
			}
			tt.complete(t, path)
			var got []channel.Message
			for range 3 {
				msgs, skips := scan(t, r)
				got = append(got, msgs...)
				if len(skips) != 0 {
					t.Errorf("after completion: reported %v", skips)
				}
			}
			if !slices.Equal(texts(got), []string{"written in place"}) {
				t.Errorf("after completion: returned %q, want it once", texts(got))
			}
		})
	}
}

// appendRest completes a file holding all but the last 7 bytes of full.
func appendRest(full []byte) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(full[len(full)-7:]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMalformedRemovedAndRewritten: a reported file that is removed and
// written again (a new file at the same name) is read again.
func TestMalformedRemovedAndRewritten(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	path := filepath.Join(root.Channel(ch), fileName("x", t0, "0001"))
	writeFile(t, path, []byte("garbage"))
	r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, skips := scan(t, r); len(skips) != 1 {
		t.Fatalf("skips = %v, want one", skips)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	scan(t, r)
	writeFile(t, path, messageJSON("x", "second try"))
	if msgs, _ := scan(t, r); !slices.Equal(texts(msgs), []string{"second try"}) {
		t.Errorf("rewritten file: %q, want [second try]", texts(msgs))
	}
}

// TestUnreadableFile: a file the reader may not open is reported once,
// skipped on every later scan without a new report, and returned once it
// becomes readable. Root ignores file modes, so the scans run on a thread
// without CAP_DAC_OVERRIDE (see withoutDAC).
func TestUnreadableFile(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	dir := root.Channel(ch)
	run := withoutDAC(t)
	locked := filepath.Join(dir, fileName("x", t0, "0001"))
	writeFile(t, locked, messageJSON("x", "locked"))
	writeFile(t, filepath.Join(dir, fileName("x", t0, "0002")), messageJSON("x", "open"))
	makeUnreadable(t, run, locked)

	r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scanAsUser := func() (msgs []channel.Message, skips []channel.Skip) {
		t.Helper()
		var err error
		run(func() { msgs, skips, err = r.Scan() })
		if err != nil {
			t.Fatal(err)
		}
		return msgs, skips
	}
	var (
		got      []channel.Message
		reported []channel.Skip
	)
	for range channel.DefaultRetries + 3 {
		msgs, skips := scanAsUser()
		got = append(got, msgs...)
		reported = append(reported, skips...)
	}
	if !slices.Equal(texts(got), []string{"open"}) {
		t.Errorf("returned %q, want [open]", texts(got))
	}
	if len(reported) != 1 || reported[0].Reason != channel.SkipUnreadable || reported[0].File != filepath.Base(locked) {
		t.Fatalf("reported %v, want %s once as %q", reported, filepath.Base(locked), channel.SkipUnreadable)
	}
	if !errors.Is(reported[0].Err, os.ErrPermission) {
		t.Errorf("Skip.Err = %v, want a permission error", reported[0].Err)
	}

	if err := os.Chmod(locked, 0o644); err != nil {
		t.Fatal(err)
	}
	msgs, skips := scanAsUser()
	if !slices.Equal(texts(msgs), []string{"locked"}) || len(skips) != 0 {
		t.Errorf("once readable: %q, %v; want [locked]", texts(msgs), skips)
	}
}

func TestReadAllOnePass(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	dir := root.Channel(ch)
	writeFile(t, filepath.Join(dir, fileName("x", t0, "0001")), []byte(`{"from":"x","content":{"te`))
	writeFile(t, filepath.Join(dir, fileName("x", t0, "0002")), messageJSON("x", "fine"))
	msgs, skips, err := channel.ReadAll(root, ch, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(texts(msgs), []string{"fine"}) {
		t.Errorf("ReadAll = %q, want [fine]", texts(msgs))
	}
	if len(skips) != 1 || skips[0].Reason != channel.SkipMalformed {
		t.Errorf("ReadAll skips = %v, want the truncated file reported at once", skips)
	}
}

func TestReaderMaxSize(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	dir := root.Channel(ch)
	small := messageJSON("x", "s")
	writeFile(t, filepath.Join(dir, fileName("x", t0, "0001")), small)
	writeFile(t, filepath.Join(dir, fileName("x", t0, "0002")), messageJSON("x", "a longer text that is over the limit"))
	r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{MaxSize: int64(len(small))})
	if err != nil {
		t.Fatal(err)
	}
	msgs, skips := scan(t, r)
	if !slices.Equal(texts(msgs), []string{"s"}) {
		t.Errorf("returned %q, want [s]", texts(msgs))
	}
	if len(skips) != 1 || skips[0].Reason != channel.SkipTooLarge {
		t.Errorf("skips = %v, want one %q", skips, channel.SkipTooLarge)
	}
}

func TestSkipString(t *testing.T) {
	tests := []struct {
		skip channel.Skip
		want string
	}{
		{channel.Skip{File: "a", Reason: channel.SkipName}, "a: not a message name"},
		{channel.Skip{File: "b", Reason: channel.SkipMalformed, Err: errors.New("boom")}, "b: malformed: boom"},
	}
	for _, tt := range tests {
		if got := tt.skip.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestScanHintedReadsOnlyHints: ScanHinted reads the files named by hints
// and lists nothing; the next Scan lists and finds the rest.
func TestScanHintedReadsOnlyHints(t *testing.T) {
	root := newRoot(t, "room")
	w := &channel.Writer{Root: root}
	r, err := channel.NewReader(root, "room", channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	post(t, w, "room", "a", "before")
	if got, _ := scan(t, r); len(got) != 1 {
		t.Fatalf("first scan: %d messages", len(got))
	}
	hinted := post(t, w, "room", "a", "hinted")
	post(t, w, "room", "b", "unhinted")
	r.Hint(hinted.File)
	got, _, err := r.ScanHinted()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"hinted"}; !slices.Equal(texts(got), want) {
		t.Errorf("ScanHinted = %q, want %q (the hinted file alone)", texts(got), want)
	}
	if got, _, _ := r.ScanHinted(); len(got) != 0 {
		t.Errorf("ScanHinted again = %q, want nothing", texts(got))
	}
	if got, _ := scan(t, r); !slices.Equal(texts(got), []string{"unhinted"}) {
		t.Errorf("Scan after = %q, want the unhinted one", texts(got))
	}
}

// TestScanHintedReportsBadFileOnce: a hinted file that does not parse is
// reported once, not at every hinted scan while the hint stands.
func TestScanHintedReportsBadFileOnce(t *testing.T) {
	root := newRoot(t, "room")
	r, err := channel.NewReader(root, "room", channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scan(t, r) // the first listing
	bad := fileName("mallory", time.Now(), "a000")
	writeFile(t, filepath.Join(root.Channel("room"), bad), []byte("{not json"))
	link := fileName("mallory", time.Now(), "a001")
	if err := os.Symlink("/etc/passwd", filepath.Join(root.Channel("room"), link)); err != nil {
		t.Fatal(err)
	}
	reports := map[string]int{}
	for range 12 {
		r.Hint(bad)
		r.Hint(link)
		_, skips, err := r.ScanHinted()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range skips {
			reports[s.File]++
		}
	}
	for _, name := range []string{bad, link} {
		if reports[name] != 1 {
			t.Errorf("%s was reported %d times over 12 hinted scans, want 1", name, reports[name])
		}
	}
}

// TestScanHintedWithNothingToRead: once the folder was listed, a
// ScanHinted with no hint does not open the folder (on NFS a lookup and a
// getattr per channel on every turn of a watcher's loop): a folder
// replaced by a link is not even looked at, while a hint or a Scan opens
// it and refuses the link.
func TestScanHintedWithNothingToRead(t *testing.T) {
	root := newRoot(t, "room")
	w := &channel.Writer{Root: root}
	r, err := channel.NewReader(root, "room", channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	post(t, w, "room", "a", "before")
	if got, _ := scan(t, r); len(got) != 1 {
		t.Fatalf("first scan: %d messages", len(got))
	}
	dir := root.Channel("room")
	if err := os.Rename(dir, dir+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("room.real", dir); err != nil {
		t.Fatal(err)
	}
	if got, _, err := r.ScanHinted(); err != nil || len(got) != 0 {
		t.Errorf("ScanHinted with no hint = %q, %v; want nothing, and the folder not opened", texts(got), err)
	}
	r.Hint("msg-29991231-235959-a-0001.json")
	if _, _, err := r.ScanHinted(); err == nil {
		t.Error("ScanHinted with a hint did not open the folder (no error on the link)")
	}
	if _, _, err := r.Scan(); err == nil {
		t.Error("Scan did not open the folder (no error on the link)")
	}
}
