package web_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
)

// tabs is the number of browser tabs the load test and benchmark open.
const tabs = 50

// loadServer serves root on loopback with a signed-in client that keeps
// up to 2*tabs connections.
func loadServer(tb testing.TB, root tree.Root, cfg web.Config) (*http.Client, string) {
	tb.Helper()
	cfg.Root, cfg.Person = root, "ann"
	srv, err := web.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(ts.Close)
	tb.Cleanup(srv.Close) // first: ends the streams ts.Close waits for
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * tabs, MaxConnsPerHost: 0}}
	tb.Cleanup(c.CloseIdleConnections)
	resp, err := c.Get(ts.URL + srv.SignInPath())
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	return c, ts.URL
}

// arrival is a message id one tab's stream received, and when.
type arrival struct {
	tab int
	id  string
	at  time.Time
}

// openTabs opens n page event streams of channel ch (each once it said
// it is connected) and reports every message id they receive on got.
func openTabs(tb testing.TB, ctx context.Context, c *http.Client, base, ch string, n int, got chan<- arrival) {
	tb.Helper()
	for i := range n {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/c/"+ch+"/events", nil)
		resp, err := c.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		if resp.StatusCode != 200 {
			resp.Body.Close()
			tb.Fatalf("tab %d: %s", i, resp.Status)
		}
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || line != ": connected\n" {
			tb.Fatalf("tab %d: first line %q %v", i, line, err)
		}
		go func() {
			defer resp.Body.Close()
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if id, ok := strings.CutPrefix(line, "id: "); ok {
					select {
					case got <- arrival{i, strings.TrimSpace(id), time.Now()}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
}

// TestFiftyTabs opens MaxStreams (50) page streams on one channel: a
// posted message reaches every one, and a 51st stream is refused (503).
func TestFiftyTabs(t *testing.T) {
	root := tree.Root(t.TempDir())
	c, base := loadServer(t, root, web.Config{MaxStreams: tabs, MaxStreamsPerPerson: tabs + 1, Poll: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan arrival, tabs)
	openTabs(t, ctx, c, base, "load", tabs, got)
	resp, err := c.Get(base + "/c/load/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "server limit (50, --max-streams)") {
		t.Errorf("stream 51: %s %s", resp.Status, body)
	}
	m := postMessage(t, root, "load", "bob", "to every tab")
	seen := map[int]bool{}
	timeout := time.After(20 * time.Second)
	for len(seen) < tabs {
		select {
		case a := <-got:
			if a.id != m.ID || seen[a.tab] {
				t.Fatalf("tab %d got %s, want %s once", a.tab, a.id, m.ID)
			}
			seen[a.tab] = true
		case <-timeout:
			t.Fatalf("%d of %d tabs got the message", len(seen), tabs)
		}
	}
}

// BenchmarkLoad is the dashboard's load test on loopback, bounded in count
// and time (run it once: -benchtime 1x). With 50 tabs' page streams open
// on one channel (Poll 2 s, as deployed) it measures: loads of a
// 100,000-message channel's page (writeBigChannel) over HTTP, p50 and p99
// of 40; the time from channel.Writer.Post being called (it writes,
// fsyncs and publishes the file) to all 50 streams having the message,
// p50 and p99 of 20 messages 100 ms apart; the server's goroutines (those
// of net/http's server connections, this package and fsnotify: the
// clients' are left out), and the process's heap and RSS growth with the
// streams open; and the CPU of the process over a 10 s idle window, per
// stream per minute. Client and server share the process and its 2 cores.
func BenchmarkLoad(b *testing.B) {
	root := tree.Root(b.TempDir())
	writeBigChannel(b, root, "big", 100_000)
	if err := (&channel.Writer{Root: root}).Post(&channel.Message{SessionID: "live", From: "bob", Content: channel.Content{Text: "the channel the tabs show"}}); err != nil {
		b.Fatal(err)
	}
	c, base := loadServer(b, root, web.Config{MaxStreams: tabs + 1, MaxStreamsPerPerson: tabs + 1})
	get := func() {
		resp, err := c.Get(base + "/c/big")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("page: %s", resp.Status)
		}
	}
	get() // warm
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore, gBefore := rss(), serverGoroutines()
	b.ResetTimer()
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan arrival, tabs*4)
		openTabs(b, ctx, c, base, "live", tabs, got)
		time.Sleep(200 * time.Millisecond) // the streams' inotify watches in place
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heap := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / (1 << 20)
		grow := float64(rss()-rssBefore) / (1 << 20)
		gs := serverGoroutines() - gBefore

		var page []time.Duration
		for range 40 {
			t0 := time.Now()
			get()
			page = append(page, time.Since(t0))
		}

		var fan []time.Duration
		w := &channel.Writer{Root: root}
		for i := range 20 {
			m := channel.Message{SessionID: "live", From: "bob", Content: channel.Content{Text: "fan-out " + strconv.Itoa(i)}}
			t0 := time.Now()
			if err := w.Post(&m); err != nil {
				b.Fatal(err)
			}
			var last time.Time
			for n := 0; n < tabs; {
				select {
				case a := <-got:
					if a.id == m.ID {
						n, last = n+1, a.at
					}
				case <-time.After(30 * time.Second):
					b.Fatalf("message %d: %d of %d tabs", i, n, tabs)
				}
			}
			fan = append(fan, last.Sub(t0))
			time.Sleep(100 * time.Millisecond)
		}

		const window = 10 * time.Second
		cpu0 := cpuTime()
		time.Sleep(window)
		idle := cpuTime() - cpu0
		cancel()

		b.ReportMetric(ms(pct(page, 50)), "page-p50-ms")
		b.ReportMetric(ms(pct(page, 99)), "page-p99-ms")
		b.ReportMetric(ms(pct(fan, 50)), "fanout-p50-ms")
		b.ReportMetric(ms(pct(fan, 99)), "fanout-p99-ms")
		b.ReportMetric(float64(gs), "server-goroutines")
		b.ReportMetric(heap, "heap-MB")
		b.ReportMetric(grow, "rss-MB")
		perStream := float64(idle) / tabs * float64(time.Minute) / float64(window)
		b.ReportMetric(perStream/float64(time.Millisecond), "cpu-ms/stream/min")
		b.Logf("\n%-44s %s\n%-44s %.1f / %.1f ms\n%-44s %.1f / %.1f ms\n%-44s %d (%.1f a stream)\n%-44s %.1f / %.1f MB\n%-44s %.2f ms",
			"50 tabs on one channel, loopback", "value",
			"page load of a 100,000-message channel p50/p99", ms(pct(page, 50)), ms(pct(page, 99)),
			"file landing -> all 50 streams have it p50/p99", ms(pct(fan, 50)), ms(pct(fan, 99)),
			"server goroutines for the 50 streams", gs, float64(gs)/tabs,
			"heap / RSS growth with the 50 streams open", heap, grow,
			"CPU per idle stream per minute", perStream/float64(time.Millisecond))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pct returns the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

// serverGoroutines counts the goroutines of the server side: net/http's
// server connections, this package's and fsnotify's.
func serverGoroutines() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	n := 0
	for g := range strings.SplitSeq(buf.String(), "\n\n") {
		if strings.Contains(g, "net/http.(*conn).serve") || strings.Contains(g, "github.com/collabdev/collab/internal/web.") ||
			strings.Contains(g, "fsnotify") {
			n++
		}
	}
	return n
}

// rss is the process's resident set in bytes, from /proc/self/status.
func rss() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
