package channel_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"collab/channel"
	"collab/internal/plumbing/tree"
)

// BenchmarkPost measures Writer.Post into a channel on the temp folder's
// filesystem, fsyncs included.
func BenchmarkPost(b *testing.B) {
	root := tree.Root(b.TempDir())
	w := &channel.Writer{Root: root}
	text := "a message of ordinary length, about as long as a chat line usually is"
	for b.Loop() {
		m := channel.Message{SessionID: "bench", From: "bench", To: "codex", Content: channel.Content{Text: text}}
		if err := w.Post(&m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// fixture writes a channel of n valid messages with plain os.WriteFile
// (no fsync) and returns its root.
func fixture(b *testing.B, ch string, n int) tree.Root {
	b.Helper()
	root := tree.Root(b.TempDir())
	dir := root.Channel(ch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		m := channel.Message{
			ID: channel.NewID("agent", at, fmtHex(uint16(i))), Timestamp: at.Format(channel.TimeFormat),
			SessionID: ch, From: "agent", To: "all", Type: "chat",
			Content: channel.Content{Text: fmt.Sprintf("message %d of the fixture", i)},
		}
		data, err := m.Encode()
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, m.ID+".json"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// BenchmarkScan100k measures scans of a 100,000-message channel: a full
// scan by a new Reader, and the scan that finds one new message after
// everything else has been read (what a watcher does every poll).
func BenchmarkScan100k(b *testing.B) {
	const (
		ch = "big"
		n  = 100_000
	)
	start := time.Now()
	root := fixture(b, ch, n)
	b.Logf("fixture of %d messages written in %v", n, time.Since(start).Round(time.Millisecond))

	b.Run("Full", func(b *testing.B) {
		for b.Loop() {
			r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{})
			if err != nil {
				b.Fatal(err)
			}
			msgs, skips, err := r.Scan()
			if err != nil || len(msgs) < n || len(skips) != 0 {
				b.Fatalf("Scan = %d messages, %d skips, %v", len(msgs), len(skips), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/scan")
	})

	// The framework may call the function below more than once (-count,
	// or its own ramp-up), each time with a new Reader that reads what the
	// calls before added: the new messages' names go on from there.
	next := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	i := 0
	b.Run("Incremental", func(b *testing.B) {
		r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := r.Scan(); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			b.StopTimer()
			i++
			name := fileName("late", next.Add(time.Duration(i)*time.Second), "0000")
			if err := os.WriteFile(filepath.Join(root.Channel(ch), name), messageJSON("late", "new"), 0o644); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			msgs, _, err := r.Scan()
			if err != nil || len(msgs) != 1 {
				b.Fatalf("Scan = %d messages, %v; want the new one", len(msgs), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/scan")
	})
}
