package inbox

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkInbox measures one inbox call over a channel of 1000 messages
// (a tenth of them for the agent): a peek that reads them all, one of the
// newest 20 (--peek's default), and a check
// when everything is already acknowledged (the cost of polling).
func BenchmarkInbox(b *testing.B) {
	root := b.TempDir()
	for i := range 1000 {
		to := "claude"
		if i%10 == 0 {
			to = "codex"
		}
		post(b, root, "dev", "gemini", to, fmt.Sprintf("message %d", i), base.Add(time.Duration(i)*time.Second))
	}
	b.Run("peek-1000", func(b *testing.B) {
		in := newInbox(b, root, "codex")
		for b.Loop() {
			items, err := in.Peek()
			if err != nil || len(items) != 100 {
				b.Fatal(len(items), err)
			}
		}
	})
	b.Run("peek-newest-20-of-1000", func(b *testing.B) {
		in := newInbox(b, root, "codex")
		for b.Loop() {
			items, more, err := in.PeekNewest(20)
			if err != nil || len(items) != 20 || more == 0 {
				b.Fatal(len(items), more, err)
			}
		}
	})
	b.Run("check-nothing-new", func(b *testing.B) {
		in := newInbox(b, root, "codex")
		if _, err := in.Check(); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if items, err := in.Check(); err != nil || len(items) != 0 {
				b.Fatal(len(items), err)
			}
		}
	})
}
