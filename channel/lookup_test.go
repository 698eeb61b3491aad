package channel_test

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestLookup(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	m := post(t, &channel.Writer{Root: root}, ch, "a", "find me")
	got, err := channel.Lookup(root, ch, m.ID)
	if err != nil || got.Content.Text != "find me" || got.File != m.File {
		t.Errorf("Lookup = %+v, %v", got, err)
	}
	tests := []struct {
		name    string
		channel string
		id      string
		want    error
	}{
		{"missing message", ch, channel.NewID("a", t0, "0000"), fs.ErrNotExist},
		{"missing channel", "other", m.ID, fs.ErrNotExist},
		{"bad channel", "../" + ch, m.ID, tree.ErrBadName},
		{"bad id", ch, "../../etc/passwd", channel.ErrNotMessageName},
		{"file name for id", ch, m.File, channel.ErrNotMessageName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := channel.Lookup(root, tt.channel, tt.id); !errors.Is(err, tt.want) {
				t.Errorf("Lookup(%q, %q) = %v, want %v", tt.channel, tt.id, err, tt.want)
			}
		})
	}
}

func TestRecent(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	dir := root.Channel(ch)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	for i := range 6 {
		writeFile(t, filepath.Join(dir, fileName("a", at(i), "0000")), messageJSON("a", fmt.Sprint(i)))
	}
	writeFile(t, filepath.Join(dir, fileName("a", at(3), "0001")), []byte("not JSON"))
	writeFile(t, filepath.Join(dir, "README"), []byte("not a message"))
	before := fileName("a", at(4), "0000")

	tests := []struct {
		name   string
		before string
		n      int
		want   []string
	}{
		{"two before", before, 2, []string{"2", "3"}},
		{"all before", before, 100, []string{"0", "1", "2", "3"}},
		{"none asked", before, 0, nil},
		{"first message", fileName("a", at(0), "0000"), 5, nil},
		{"before a name not written yet", fileName("a", at(10), "0000"), 3, []string{"3", "4", "5"}},
		{"the newest, no bound", "", 2, []string{"4", "5"}},
		{"all, no bound", "", 100, []string{"0", "1", "2", "3", "4", "5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := channel.Recent(root, ch, tt.before, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(texts(got), tt.want) {
				t.Errorf("Recent(%s, %d) = %q, want %q", tt.before, tt.n, texts(got), tt.want)
			}
		})
	}
	if _, err := channel.Recent(root, ch, "README", 3); err == nil {
		t.Error("Recent before a non-message name succeeded")
	}
	if _, err := channel.Recent(root, "../x", before, 3); !errors.Is(err, tree.ErrBadName) {
		t.Errorf("Recent in a bad channel = %v, want ErrBadName", err)
	}
}

// TestRecentReadsOnlyTheTail: reading the newest few messages reads the
// files it returns and, for order, the other files named in the same
// second, never the rest of the channel, even where many messages share
// a second (a busy channel).
func TestRecentReadsOnlyTheTail(t *testing.T) {
	const ch = "busy"
	root := newRoot(t, ch)
	dir := root.Channel(ch)
	const seconds, perSecond = 6, 20
	for s := range seconds {
		for i := range perSecond {
			// Timestamps run against the hex, so order within a second
			// needs the JSON time.
			ts := t0.Add(time.Duration(s)*time.Second + time.Duration(perSecond-i)*time.Millisecond)
			data := fmt.Appendf(nil, `{"id":"x","timestamp":%q,"from":"a","content":{"text":"%d.%d"}}`,
				ts.Format(channel.TimeFormat), s, perSecond-i)
			writeFile(t, filepath.Join(dir, fileName("a", t0.Add(time.Duration(s)*time.Second), fmt.Sprintf("%04x", i))), data)
		}
	}
	newest := fileName("a", t0.Add((seconds-1)*time.Second), "")
	newest = newest[:len(newest)-len("0000.json")] // the newest second's prefix
	reads := map[string]int{}
	channel.OnTailRead(func(file string) { reads[file]++ })
	t.Cleanup(func() { channel.OnTailRead(nil) })

	got, err := channel.Recent(root, ch, "", 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"5.18", "5.19", "5.20"}; !slices.Equal(texts(got), want) {
		t.Errorf("Recent(3) = %q, want %q", texts(got), want)
	}
	total := 0
	for file, n := range reads {
		total += n
		if !strings.HasPrefix(file, newest) {
			t.Errorf("Recent(3) read %s, outside the newest second", file)
		}
	}
	if total > perSecond+3 {
		t.Errorf("Recent(3) made %d reads, want at most %d", total, perSecond+3)
	}
}
