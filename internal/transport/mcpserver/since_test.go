package mcpserver

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// allocated returns how many bytes f allocated (the whole process's, so
// the server's too).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReadSinceLeavesOlderUnread: channel_peek (and so channel_read) with
// since read none of the messages named before it (here 40 of 512 KB,
// an hour back, which reading would cost over 20 MB), and stop at limit.
func TestReadSinceLeavesOlderUnread(t *testing.T) {
	root := tree.Root(t.TempDir())
	dir := root.Channel("dev")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 512<<10)
	old := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	for i := range 40 {
		at := old.Add(time.Duration(i) * time.Second)
		data := fmt.Appendf(nil, `{"timestamp":%q,"from":"human","to":"all","content":{"text":%q}}`, at.Format(channel.TimeFormat), big)
		if err := os.WriteFile(filepath.Join(dir, channel.NewID("human", at, "0000")+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Posts 10 ms apart: two in one millisecond would be ordered by their
	// random names.
	base, n := time.Now(), 0
	w := &channel.Writer{Root: root, Now: func() time.Time { n++; return base.Add(time.Duration(n) * 10 * time.Millisecond) }}
	var fresh []string
	for i := range 4 {
		m := &channel.Message{SessionID: "dev", From: "human", To: "claude", Content: channel.Content{Text: fmt.Sprint("new ", i)}}
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, m.ID)
	}
	_, cs := connect(t, root)
	ids := func(r ReadResult) []string {
		var out []string
		for _, m := range r.Messages {
			out = append(out, m.ID)
		}
		return out
	}
	call(t, cs, "who", nil, nil) // the session's own first costs
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       []string
		more       bool
	}{
		{"after an id", "channel_peek", map[string]any{"since": fresh[0]}, fresh[1:], false},
		{"after an id, limited", "channel_peek", map[string]any{"since": fresh[0], "limit": 2}, fresh[2:], true},
		{"after a time", "channel_peek", map[string]any{"since": old.Add(5 * time.Minute).Format(time.RFC3339)}, fresh, false},
		{"after an id not here", "channel_peek", map[string]any{"since": channel.NewID("nobody", old.Add(5*time.Minute), "0000")}, fresh, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r ReadResult
			n := allocated(func() {
				if e := call(t, cs, tc.tool, tc.args, &r); e != "" {
					t.Fatal(e)
				}
			})
			if got := ids(r); !slices.Equal(got, tc.want) || r.More != tc.more {
				t.Errorf("%s = %v, more %v; want %v, more %v", tc.tool, got, r.More, tc.want, tc.more)
			}
			if n > 4<<20 {
				t.Errorf("%s allocated %d bytes: it read messages named before since", tc.tool, n)
			}
		})
	}
}

// TestReadMoreExact: more is true only when messages after since (or, with
// no since, older ones) were left out by the limit: a limit that takes
// exactly what is there says no more, a minute of margin or not.
func TestReadMoreExact(t *testing.T) {
	root := tree.Root(t.TempDir())
	w := &channel.Writer{Root: root}
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var ids []string
	for i := range 4 {
		at := base.Add(time.Duration(i) * time.Minute)
		w.Now = func() time.Time { return at }
		m := &channel.Message{SessionID: "dev", From: "human", Content: channel.Content{Text: "x"}}
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	_, cs := connect(t, root)
	for _, c := range []struct {
		since string
		limit int
		n     int
		more  bool
	}{
		{ids[0], 3, 3, false},
		{ids[0], 2, 2, true},
		{base.Add(30 * time.Second).Format(time.RFC3339), 3, 3, false},
		{"", 4, 4, false},
		{"", 3, 3, true},
	} {
		var r ReadResult
		if e := call(t, cs, "channel_peek", map[string]any{"since": c.since, "limit": c.limit}, &r); e != "" || len(r.Messages) != c.n || r.More != c.more {
			t.Errorf("since %q limit %d: %d messages, more %v, %s; want %d, %v", c.since, c.limit, len(r.Messages), r.More, e, c.n, c.more)
		}
	}
}
