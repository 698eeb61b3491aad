package channel

import (
	"errors"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// FuzzNewestSince: any since is read as a message id or a time, or
// refused as a *SinceError, without reading anything; nothing panics and
// nothing returned is at or before the point.
func FuzzNewestSince(f *testing.F) {
	root := tree.Root(f.TempDir())
	w := Writer{Root: root}
	base := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	var first string
	for i := range 4 {
		at := base.Add(time.Duration(i) * time.Minute)
		w.Now = func() time.Time { return at }
		m := &Message{SessionID: "dev", From: "a", Content: Content{Text: "x"}}
		if err := w.Post(m); err != nil {
			f.Fatal(err)
		}
		if first == "" {
			first = m.ID
		}
	}
	for _, s := range []string{"", first, "msg-20261125-100100-a-0000", "2026-11-25T10:01:30Z", "2026-11-25", "2026-11-25T10:02", "yesterday", "../x", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, since string) {
		msgs, _, _, err := NewestSince(root, "dev", since, 10)
		var se *SinceError
		if err != nil {
			if !errors.As(err, &se) {
				t.Fatalf("since %q: %v", since, err)
			}
			return
		}
		if since == "" && len(msgs) != 4 {
			t.Fatalf("no since: %d messages", len(msgs))
		}
		if at, err := parseSinceTime(since); err == nil {
			for _, m := range msgs {
				if !m.Time().After(at) {
					t.Fatalf("since %q: %s at %s", since, m.ID, m.Timestamp)
				}
			}
		}
	})
}
