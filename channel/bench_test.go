package channel_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
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

// BenchmarkPostSigned is BenchmarkPost with a signing key: the cost of
// the signature (and of the extras signature, on a message with extras)
// on top of the atomic publish.
func BenchmarkPostSigned(b *testing.B) {
	root := tree.Root(b.TempDir())
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	w := &channel.Writer{Root: root, Signer: signing.NewSigner("bench", priv)}
	text := "a message of ordinary length, about as long as a chat line usually is"
	for b.Loop() {
		m := channel.Message{SessionID: "bench", From: "bench", To: "codex", Content: channel.Content{Text: text}}
		m.Metadata.Host = "vm-1"
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

// BenchmarkTail measures reading the newest 5 messages (read --limit 5,
// a prompt's context) of a busy channel: 20,000 small messages, 50 to a
// second, then 80 messages of 1 MB, 4 to a second. "Recent" is
// channel.Recent; "ScanAll" is what read --limit did before it: read the
// whole channel and keep the last 5. Its cost should follow the 5, not
// the channel.
func BenchmarkTail(b *testing.B) {
	const (
		ch    = "busy"
		small = 20_000
		big   = 80
		limit = 5
	)
	start := time.Now()
	root := tree.Root(b.TempDir())
	dir := root.Channel(ch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(i int, at time.Time, text string) {
		m := channel.Message{
			ID: channel.NewID("agent", at.Truncate(time.Second), fmtHex(uint16(i))), Timestamp: at.Format(channel.TimeFormat),
			SessionID: ch, From: "agent", To: "all", Content: channel.Content{Text: text},
		}
		data, err := m.Encode()
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, m.ID+".json"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := range small {
		write(i, t0.Add(time.Duration(i)*20*time.Millisecond), fmt.Sprintf("message %d of the fixture", i))
	}
	text := strings.Repeat("x", channel.MaxMessageSize-512)
	for i := range big {
		write(small+i, t0.Add(time.Hour+time.Duration(i)*250*time.Millisecond), text)
	}
	b.Logf("fixture of %d small and %d 1 MB messages written in %v", small, big, time.Since(start).Round(time.Millisecond))

	b.Run("Recent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, err := channel.Recent(root, ch, "", limit)
			if err != nil || len(msgs) != limit {
				b.Fatalf("Recent = %d messages, %v", len(msgs), err)
			}
		}
	})
	b.Run("ScanAll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := channel.NewReader(root, ch, channel.Cursor{}, channel.ReaderOptions{Retries: 1})
			if err != nil {
				b.Fatal(err)
			}
			msgs, _, err := r.Scan()
			if err != nil || len(msgs) != small+big {
				b.Fatalf("Scan = %d messages, %v", len(msgs), err)
			}
			_ = msgs[len(msgs)-limit:]
		}
	})
}

// BenchmarkMessage1MB measures Decode and Encode of one message of about
// 1 MB, what reading a channel's tail costs per big message.
func BenchmarkMessage1MB(b *testing.B) {
	m := channel.Message{
		ID: "msg-20250101-000000-agent-0001", Timestamp: "2025-01-01T00:00:00.000000Z",
		SessionID: "busy", From: "agent", To: "all",
		Content: channel.Content{Text: strings.Repeat("a long paste: log lines, a diff. ", channel.MaxMessageSize/34)},
	}
	data, err := m.Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := channel.Decode(data, m.ID+".json", "busy"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Encode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := m.Encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
