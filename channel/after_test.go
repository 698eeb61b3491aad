package channel_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// oldAndNew writes old messages, one a second from t0, then the new ones
// after them (text "new-I", addressed to "bob" when I is odd), and
// returns the tree and the time of the first new message.
func oldAndNew(t testing.TB, ch string, old, fresh int) (tree.Root, time.Time) {
	t.Helper()
	root := newRoot(t, ch)
	dir := root.Channel(ch)
	for i := range old {
		writeFile(t, filepath.Join(dir, fileName("a", t0.Add(time.Duration(i)*time.Second), "0000")), messageJSON("a", fmt.Sprint("old-", i)))
	}
	start := t0.Add(time.Duration(old) * time.Second)
	for i := range fresh {
		to := "all"
		if i%2 == 1 {
			to = "bob"
		}
		data := fmt.Appendf(nil, `{"from":"a","to":%q,"content":{"text":"new-%d"}}`, to, i)
		writeFile(t, filepath.Join(dir, fileName("a", start.Add(time.Duration(i)*time.Second), "0000")), data)
	}
	return root, start
}

// TestNewestReadsOnlyWhatItKeeps: from a channel of 2,000 old messages,
// Newest reads none of the names keep refuses, and among the kept ones
// stops once n are accepted.
func TestNewestReadsOnlyWhatItKeeps(t *testing.T) {
	const ch = "busy"
	root, start := oldAndNew(t, ch, 2000, 30)
	var reads []string
	channel.OnNewestRead(func(file string) { reads = append(reads, file) })
	t.Cleanup(func() { channel.OnNewestRead(nil) })

	toBob := func(m *channel.Message) bool { return m.To == "bob" }
	msgs, more, skips, err := channel.Newest(root, ch, 5, channel.After(start, 0), toBob)
	if err != nil || len(skips) > 0 {
		t.Fatalf("Newest: %v, skips %v", err, skips)
	}
	if got, want := texts(msgs), []string{"new-21", "new-23", "new-25", "new-27", "new-29"}; !slices.Equal(got, want) {
		t.Errorf("Newest = %q, want %q", got, want)
	}
	if len(reads) > 10 {
		t.Errorf("Newest read %d files for 5 messages of a channel of 2,030: %v", len(reads), reads)
	}
	for _, f := range reads {
		if n, _ := channel.ParseName(f); n.Time.Before(start) {
			t.Errorf("Newest read %s, named before the bound", f)
		}
	}
	if want := 30 - len(reads); more != want {
		t.Errorf("more = %d, want %d (the kept names not read)", more, want)
	}

	// Everything kept, fewer than n: all of it, nothing more.
	reads = nil
	msgs, more, _, err = channel.Newest(root, ch, 100, channel.After(start.Add(25*time.Second), 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := texts(msgs), []string{"new-25", "new-26", "new-27", "new-28", "new-29"}; !slices.Equal(got, want) || more != 0 || len(reads) != 5 {
		t.Errorf("Newest = %q, more %d, %d reads; want %q, 0, 5", got, more, len(reads), want)
	}

	// The margin keeps names that far before the bound.
	msgs, _, _, err = channel.Newest(root, ch, 100, channel.After(start, 2*time.Second), nil)
	if err != nil || len(msgs) != 32 || !strings.HasPrefix(msgs[0].Content.Text, "old-1998") {
		t.Errorf("Newest with a 2 s margin: %d messages, first %q, %v", len(msgs), texts(msgs[:1]), err)
	}
}

// TestNewestBoundarySecond: where many names share the boundary second,
// the newest n in channel order (JSON time within the second) are
// returned, whatever the names' order.
func TestNewestBoundarySecond(t *testing.T) {
	const ch = "c"
	root := newRoot(t, ch)
	dir := root.Channel(ch)
	for i := range 10 {
		// Timestamps run against the hex.
		ts := t0.Add(time.Duration(10-i) * time.Millisecond)
		data := fmt.Appendf(nil, `{"id":"x","timestamp":%q,"from":"a","content":{"text":"%d"}}`, ts.Format(channel.TimeFormat), 10-i)
		writeFile(t, filepath.Join(dir, fileName("a", t0, fmt.Sprintf("%04x", i))), data)
	}
	msgs, more, _, err := channel.Newest(root, ch, 3, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := texts(msgs), []string{"8", "9", "10"}; !slices.Equal(got, want) || more != 7 {
		t.Errorf("Newest = %q, more %d; want %q, 7", got, more, want)
	}
	if msgs, _, _, err := channel.Newest(root, "nope", 3, nil, nil); err != nil || len(msgs) != 0 {
		t.Errorf("Newest of a missing channel = %v, %v; want nothing", msgs, err)
	}
}

// BenchmarkNewest: the newest 5 of a channel of 2,000 messages, after a
// time (the MCP's since) and by recipient (the inbox's peek).
func BenchmarkNewest(b *testing.B) {
	const ch = "bench"
	root, start := oldAndNew(b, ch, 2000, 30)
	toBob := func(m *channel.Message) bool { return m.To == "bob" }
	for b.Loop() {
		if _, _, _, err := channel.Newest(root, ch, 5, channel.After(start, 0), toBob); err != nil {
			b.Fatal(err)
		}
	}
}
