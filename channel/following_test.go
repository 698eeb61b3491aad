package channel_test

import (
	"os"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestFollowing: pages forward in channel order, within a second too; an
// id that is gone still places the page; more counts what is left.
func TestFollowing(t *testing.T) {
	root := tree.Root(t.TempDir())
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 8 {
		at := t0.Add(time.Duration(i/2) * time.Second) // two messages a second
		m := channel.Message{SessionID: "dev", From: "a", Content: channel.Content{Text: "m"}}
		w := channel.Writer{Root: root, Now: func() time.Time { return at.Add(time.Duration(i%2) * time.Millisecond) }}
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	page := func(after string, n int) ([]string, int) {
		t.Helper()
		msgs, more, skips, err := channel.Following(root, "dev", after, n)
		if err != nil || len(skips) > 0 {
			t.Fatalf("Following(%q, %d): %v %v", after, n, err, skips)
		}
		var got []string
		for _, m := range msgs {
			got = append(got, m.ID)
		}
		return got, more
	}
	eq := func(got, want []string) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	}
	if got, more := page("", 3); !eq(got, ids[:3]) || more == 0 {
		t.Fatalf("from the start: %v more %d", got, more)
	}
	if got, more := page(ids[2], 3); !eq(got, ids[3:6]) || more == 0 {
		t.Fatalf("after %s: %v more %d; want %v", ids[2], got, more, ids[3:6])
	}
	if got, more := page(ids[5], 10); !eq(got, ids[6:]) || more != 0 {
		t.Fatalf("to the end: %v more %d", got, more)
	}
	if got, _ := page(ids[7], 10); len(got) != 0 {
		t.Fatalf("after the last: %v", got)
	}
	if err := os.Remove(root.Channel("dev") + "/" + ids[4] + ".json"); err != nil {
		t.Fatal(err)
	}
	if got, _ := page(ids[4], 2); !eq(got, ids[5:7]) {
		t.Fatalf("after a removed id: %v; want %v", got, ids[5:7])
	}
	if _, _, _, err := channel.Following(root, "dev", "nope", 1); err == nil {
		t.Fatal("a bad id was accepted")
	}
}
