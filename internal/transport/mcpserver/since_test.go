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

	"collab/channel"
	"collab/internal/plumbing/tree"
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
