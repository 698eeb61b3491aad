package live

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

// fakeStarter starts fakeSessions, numbered from 1.
type fakeStarter struct {
	mu      sync.Mutex
	started []Options
	all     []*fakeSession
	dieNext bool // the next session started dies in its first turn
}

func (f *fakeStarter) Start(_ context.Context, opts Options) (Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, opts)
	s := &fakeSession{pid: len(f.started), session: opts.Resume, done: make(chan struct{}), die: f.dieNext}
	f.dieNext = false
	if s.session == "" {
		s.session = fmt.Sprintf("sess-%d", s.pid)
	}
	f.all = append(f.all, s)
	return s, nil
}

func (f *fakeStarter) open() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var pids []int
	for _, s := range f.all {
		if !s.isClosed() {
			pids = append(pids, s.pid)
		}
	}
	return pids
}

type fakeSession struct {
	pid     int
	session string
	die     bool
	mu      sync.Mutex
	closed  bool
	turns   []string
	done    chan struct{}
}

func (s *fakeSession) Turn(_ context.Context, req modelcli.Request) (modelcli.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.OnStart != nil {
		req.OnStart(s.pid)
	}
	if s.die {
		s.kill()
		return modelcli.Response{Session: s.session}, fmt.Errorf("%w: killed", ErrDied)
	}
	s.turns = append(s.turns, req.Prompt)
	return modelcli.Response{Text: "echo: " + req.Prompt, Session: s.session}, nil
}

func (s *fakeSession) kill() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
}

func (s *fakeSession) Interrupt(context.Context) error { return nil }
func (s *fakeSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.kill()
	return nil
}
func (s *fakeSession) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
func (s *fakeSession) PID() int              { return s.pid }
func (s *fakeSession) SessionID() string     { return s.session }
func (s *fakeSession) Done() <-chan struct{} { return s.done }

// turn runs a turn of key, resuming the session its last turn reported,
// as the watcher does.
func turn(t *testing.T, p *Pool, key, prompt string) (modelcli.Response, int) {
	t.Helper()
	var pid int
	resp, err := p.Turn(context.Background(), key, modelcli.Request{Prompt: prompt, Session: lastSession[key], OnStart: func(n int) { pid = n }})
	if err != nil {
		t.Fatalf("turn %s %q: %v", key, prompt, err)
	}
	lastSession[key] = resp.Session
	return resp, pid
}

// lastSession is the session of each key's last turn (tests here are not
// parallel; each starts with clear(lastSession)).
var lastSession = map[string]string{}

func keys(p *Pool) []string {
	var ks []string
	for _, s := range p.Stats() {
		ks = append(ks, s.Key)
	}
	return ks
}

func TestPoolReusesAndIdles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clear(lastSession)
		f := &fakeStarter{}
		p := NewPool(f, Config{Idle: time.Minute})
		defer p.Close()
		_, a := turn(t, p, "ch", "one")
		time.Sleep(50 * time.Second)
		_, b := turn(t, p, "ch", "two")
		if a != 1 || b != 1 {
			t.Fatalf("pids %d, %d: want one process", a, b)
		}
		time.Sleep(59 * time.Second) // idle 59s since its last turn
		synctest.Wait()
		if got := keys(p); !slices.Equal(got, []string{"ch"}) {
			t.Fatalf("open before the idle limit: %v", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := keys(p); len(got) != 0 || len(f.open()) != 0 {
			t.Fatalf("open after the idle limit: %v, processes %v", got, f.open())
		}
		// The next turn resumes the stopped process's session.
		_, c := turn(t, p, "ch", "three")
		if c != 2 || f.started[1].Resume != "sess-1" {
			t.Errorf("restart: pid %d resuming %q, want 2 resuming sess-1", c, f.started[1].Resume)
		}
	})
}

func TestPoolLRU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clear(lastSession)
		f := &fakeStarter{}
		p := NewPool(f, Config{Max: 2})
		defer p.Close()
		turn(t, p, "a", "1")
		time.Sleep(time.Second)
		turn(t, p, "b", "1")
		time.Sleep(time.Second)
		turn(t, p, "a", "2") // b is now the least recently used
		time.Sleep(time.Second)
		turn(t, p, "c", "1")
		synctest.Wait()
		if got := keys(p); !slices.Equal(got, []string{"a", "c"}) {
			t.Errorf("open: %v, want a and c", got)
		}
		if got := f.open(); !slices.Equal(got, []int{1, 3}) {
			t.Errorf("processes open: %v, want 1 and 3", got)
		}
	})
}

func TestPoolRedoesAfterDeath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clear(lastSession)
		f := &fakeStarter{}
		p := NewPool(f, Config{})
		defer p.Close()
		turn(t, p, "ch", "one")
		// Dies between turns: the next starts a process resuming it.
		f.all[0].kill()
		_, pid := turn(t, p, "ch", "two")
		if pid != 2 || f.started[1].Resume != "sess-1" {
			t.Fatalf("after a death between turns: pid %d resuming %q", pid, f.started[1].Resume)
		}
		// Dies mid-turn: redone once in a new process.
		f.all[1].die = true
		resp, pid := turn(t, p, "ch", "three")
		if pid != 3 || resp.Text != "echo: three" || f.started[2].Resume != "sess-1" {
			t.Fatalf("after a death mid-turn: pid %d, %q, resuming %q", pid, resp.Text, f.started[2].Resume)
		}
		if got := f.all[2].turns; !slices.Equal(got, []string{"three"}) {
			t.Errorf("turns of the new process: %v", got)
		}
		// Dies twice: the error.
		f.all[2].die, f.dieNext = true, true
		if _, err := p.Turn(context.Background(), "ch", modelcli.Request{Prompt: "four"}); err == nil {
			t.Error("two deaths: no error")
		}
	})
}

func TestPoolGrantRunsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clear(lastSession)
		f := &fakeStarter{}
		p := NewPool(f, Config{})
		defer p.Close()
		turn(t, p, "ch", "one")
		var pid int
		_, err := p.Turn(context.Background(), "ch", modelcli.Request{Prompt: "allowed", Session: "sess-1", AllowTools: []string{"Bash(ls)"}, OnStart: func(n int) { pid = n }})
		if err != nil || pid != 2 || !slices.Equal(f.started[1].AllowTools, []string{"Bash(ls)"}) {
			t.Fatalf("grant: pid %d, %v, started %+v", pid, err, f.started)
		}
		_, pid = turn(t, p, "ch", "after")
		if pid != 3 || len(f.started[2].AllowTools) != 0 || f.started[2].Resume != "sess-1" {
			t.Errorf("after the grant: pid %d, started %+v", pid, f.started[2])
		}
	})
}

func TestPoolClose(t *testing.T) {
	clear(lastSession)
	f := &fakeStarter{}
	p := NewPool(f, Config{})
	turn(t, p, "a", "1")
	turn(t, p, "b", "1")
	p.Close()
	if got := f.open(); len(got) != 0 {
		t.Errorf("open after Close: %v", got)
	}
	if _, err := p.Turn(context.Background(), "a", modelcli.Request{}); err != ErrClosed {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

func TestPoolSticky(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{}
		p := NewPool(f, Config{Sticky: []string{"HOPS"}})
		defer p.Close()
		pid := func(env ...string) int {
			var n int
			if _, err := p.Turn(context.Background(), "ch", modelcli.Request{Env: env, Session: "sess-1", OnStart: func(x int) { n = x }}); err != nil {
				t.Fatal(err)
			}
			return n
		}
		got := []int{pid("HOPS=0", "X=1"), pid("HOPS=0", "X=2"), pid("HOPS=1"), pid("HOPS=0", "HOPS=1")}
		if want := []int{1, 1, 2, 2}; !slices.Equal(got, want) {
			t.Errorf("pids %v, want %v: a new process when HOPS changes, not X", got, want)
		}
		if f.started[1].Resume != "sess-1" {
			t.Errorf("the restart resumed %q", f.started[1].Resume)
		}
	})
}
