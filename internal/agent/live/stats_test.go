package live

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/presence"
)

// fakeRSS gives process group g g MiB in g+1 processes, and counts its calls.
type fakeRSS struct{ calls int }

func (f *fakeRSS) read(pgids []int) map[int]groupUsage {
	f.calls++
	out := map[int]groupUsage{}
	for _, g := range pgids {
		out[g] = groupUsage{rss: int64(g) << 20, procs: g + 1}
	}
	return out
}

func TestPoolLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clear(lastSession)
		f := &fakeStarter{}
		p := NewPool(f, Config{Max: 2})
		rss := &fakeRSS{}
		p.use.read = rss.read
		if got := p.Live(); got.Sessions != 0 || got.Max != 2 || len(got.Processes) != 0 || rss.calls != 0 {
			t.Errorf("no sessions: %+v after %d readings", got, rss.calls)
		}
		turn(t, p, "a", "1")
		time.Sleep(time.Second)
		turn(t, p, "b", "1")
		synctest.Wait()
		// The first call starts a reading, in the background.
		want := &presence.Live{Sessions: 2, Max: 2, Processes: []presence.LiveProcess{{Key: "a", PID: 1}, {Key: "b", PID: 2}}}
		if got := p.Live(); !sameLive(got, want) {
			t.Errorf("two sessions, before the reading: %+v, want %+v", got, want)
		}
		synctest.Wait()
		want = &presence.Live{Sessions: 2, Max: 2, RSSBytes: 3 << 20, Processes: []presence.LiveProcess{
			{Key: "b", PID: 2, RSSBytes: 2 << 20}, {Key: "a", PID: 1, RSSBytes: 1 << 20}}}
		if got := p.Live(); !sameLive(got, want) || rss.calls != 1 {
			t.Errorf("two sessions: %+v after %d readings, want %+v after 1", got, rss.calls, want)
		}
		// The next reading is RSSEvery later; a process started in
		// between has none yet.
		turn(t, p, "c", "1") // stops a, the least recently used
		synctest.Wait()
		want = &presence.Live{Sessions: 2, Max: 2, RSSBytes: 2 << 20, Processes: []presence.LiveProcess{
			{Key: "b", PID: 2, RSSBytes: 2 << 20}, {Key: "c", PID: 3}}}
		if got := p.Live(); !sameLive(got, want) || rss.calls != 1 {
			t.Errorf("within RSSEvery: %+v after %d readings, want %+v after 1", got, rss.calls, want)
		}
		time.Sleep(RSSEvery)
		p.Live()
		synctest.Wait()
		want.RSSBytes, want.Processes = 5<<20, []presence.LiveProcess{{Key: "c", PID: 3, RSSBytes: 3 << 20}, {Key: "b", PID: 2, RSSBytes: 2 << 20}}
		if got := p.Live(); !sameLive(got, want) || rss.calls != 2 {
			t.Errorf("after RSSEvery: %+v after %d readings, want %+v after 2", got, rss.calls, want)
		}
		p.Close()
		if got := p.Live(); got.Sessions != 0 || len(got.Processes) != 0 {
			t.Errorf("after Close: %+v", got)
		}
	})
}

// TestPoolLiveSlowReading: a reading of /proc that takes long holds up
// no caller, and only one runs at a time.
func TestPoolLiveSlowReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clear(lastSession)
		p := NewPool(&fakeStarter{}, Config{})
		defer p.Close()
		var calls atomic.Int32
		p.use.read = func(pgids []int) map[int]groupUsage {
			calls.Add(1)
			time.Sleep(time.Minute)
			return map[int]groupUsage{1: {rss: 7}}
		}
		turn(t, p, "a", "1")
		synctest.Wait()
		start := time.Now()
		for range 3 {
			if got := p.Live(); got.RSSBytes != 0 {
				t.Errorf("during the reading: %+v", got)
			}
			time.Sleep(RSSEvery)
		}
		if d := time.Since(start); d != 3*RSSEvery {
			t.Errorf("three calls took %v beyond their pauses", d-3*RSSEvery)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		got := p.Live()
		synctest.Wait()
		if got.RSSBytes != 7 || calls.Load() != 2 {
			t.Errorf("after the reading: %+v, %d readings; want 7 bytes, and the next reading started", got, calls.Load())
		}
		time.Sleep(time.Minute) // for the next reading to end
	})
}

func sameLive(a, b *presence.Live) bool {
	return a.Sessions == b.Sessions && a.Max == b.Max && a.RSSBytes == b.RSSBytes && slices.Equal(a.Processes, b.Processes)
}

// blockingStarter starts fakeSessions once release is closed.
type blockingStarter struct {
	fakeStarter
	starting chan struct{} // closed when a Start begins
	release  chan struct{}
}

func (b *blockingStarter) Start(ctx context.Context, opts Options) (Session, error) {
	close(b.starting)
	<-b.release
	return b.fakeStarter.Start(ctx, opts)
}

// TestPoolLiveDoesNotWait: Live answers while the pool's goroutine is
// busy starting a process.
func TestPoolLiveDoesNotWait(t *testing.T) {
	b := &blockingStarter{starting: make(chan struct{}), release: make(chan struct{})}
	p := NewPool(b, Config{})
	defer p.Close()
	p.use.read = (&fakeRSS{}).read
	turned := make(chan error, 1)
	go func() {
		_, err := p.Turn(context.Background(), "a", modelcli.Request{Prompt: "1"})
		turned <- err
	}()
	<-b.starting
	answered := make(chan *presence.Live, 1)
	go func() { answered <- p.Live() }()
	select {
	case l := <-answered:
		if l.Sessions != 0 {
			t.Errorf("while the first starts: %+v", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Live waited for the process being started")
	}
	close(b.release)
	if err := <-turned; err != nil {
		t.Fatal(err)
	}
}

// TestGroupRSS reads a real process group: a shell and the two sleeps it
// started.
func TestGroupRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sh", "-c", "sleep 600 & sleep 600 & wait")
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
	})
	var g groupUsage
	for deadline := time.Now().Add(30 * time.Second); ; {
		g = groupRSS([]int{pid, 1 << 30})[pid]
		if g.procs == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if g.procs != 3 {
		t.Fatalf("%d processes in the group, want 3 (sh and two sleeps)", g.procs)
	}
	own, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if sh := statusKB(own, "VmRSS") << 10; sh <= 0 || g.rss <= sh {
		t.Errorf("group rss %d, want more than the shell's own %d", g.rss, sh)
	}
}

func TestStatPgid(t *testing.T) {
	for _, tt := range []struct {
		stat string
		want int
		ok   bool
	}{
		{"123 (sleep) S 1 123 123 0 -1", 123, true},
		{"7 (a) b) (c) R 1 99 7 0", 99, true},
		{"7 (x) S 1", 0, false},
		{"7 x S 1 2 3", 0, false},
		{"7 (x) S 1 -4 3", 0, false},
	} {
		g, ok := statPgid([]byte(tt.stat))
		if g != tt.want || ok != tt.ok {
			t.Errorf("statPgid(%q) = %d, %v; want %d, %v", tt.stat, g, ok, tt.want, tt.ok)
		}
	}
	if got := statusKB([]byte("Name:\tx\nVmRSS:\t  1234 kB\nVmHWM:\t9 kB\n"), "VmRSS"); got != 1234 {
		t.Errorf("statusKB = %d, want 1234", got)
	}
}

func FuzzStatPgid(f *testing.F) {
	for _, s := range []string{"123 (sleep) S 1 123 123 0 -1", "7 (a) b) (c) R 1 99 7 0", "", ")", "1 () S 1 2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if g, ok := statPgid(b); ok && g <= 0 {
			t.Fatalf("pgid %d reported ok", g)
		}
		if n := statusKB(b, "VmRSS"); n < 0 {
			t.Fatalf("negative %d", n)
		}
	})
}
