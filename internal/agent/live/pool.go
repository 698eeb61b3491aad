package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/watchconf"
)

// Defaults of a zero Config.
const (
	DefaultIdle = watchconf.DefaultLiveIdle // collab watch --live-idle
	DefaultMax  = watchconf.DefaultLiveMax  // collab watch --live-max
)

// Config configures a Pool. Zero fields take the defaults.
type Config struct {
	Idle   time.Duration // stop a session unused this long; default DefaultIdle
	Max    int           // sessions open at most; default DefaultMax
	Logger *slog.Logger  // default: discard
	// Sticky are variables of a turn's Env (modelcli.Request.Env) that a
	// process must have been started with: a turn whose value differs
	// from the warm process's runs in a new process resuming the session.
	// The watcher's is COLLAB_HOPS, which bounds the chains of messages
	// the model sends itself.
	Sticky []string
}

// Pool holds live sessions by key. It is safe for concurrent use; one
// goroutine (started by NewPool, ended by Close) owns its state.
type Pool struct {
	start Starter
	cfg   Config
	log   *slog.Logger

	get     chan getReq
	put     chan putReq
	stat    chan chan []Stat
	closing chan struct{}
	closed  chan struct{}
	stops   sync.WaitGroup // sessions being stopped
	use     usage          // what Live reports (stats.go)
}

// Stat describes one open session.
type Stat struct {
	Key     string
	PID     int
	Session string
	Busy    bool
	Used    time.Time // when its last turn ended (or it started)
}

type entry struct {
	sess   Session
	env    []string // the Env it was started with
	busy   bool
	oneOff bool // granted rules: stopped after its turn
	used   time.Time
}

type getReq struct {
	key   string
	opts  Options
	reply chan getReply
}

type getReply struct {
	sess Session
	err  error
}

type putReq struct {
	key  string
	sess Session
	keep bool
}

// NewPool returns a pool that starts sessions with start, and starts its
// goroutine; Close ends it.
func NewPool(start Starter, cfg Config) *Pool {
	cfg.Idle = cmp.Or(cfg.Idle, DefaultIdle)
	cfg.Max = cmp.Or(cfg.Max, DefaultMax)
	p := &Pool{
		start: start, cfg: cfg, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		get: make(chan getReq), put: make(chan putReq), stat: make(chan chan []Stat),
		closing: make(chan struct{}), closed: make(chan struct{}),
	}
	go p.loop()
	return p
}

// Turn runs req as a turn of key's session, starting (or restarting) its
// process as needed; see the package documentation. req.Session is the
// CLI session a new process resumes, unless the key's last process knew a
// later one.
func (p *Pool) Turn(ctx context.Context, key string, req modelcli.Request) (modelcli.Response, error) {
	opts := Options{Resume: req.Session, Env: req.Env, Dir: req.Dir, AllowTools: req.AllowTools}
	for redo := false; ; redo = true {
		s, err := p.acquire(ctx, key, opts)
		if err != nil {
			return modelcli.Response{}, err
		}
		resp, err := s.Turn(ctx, req)
		died := errors.Is(err, ErrDied) || errors.Is(err, modelcli.ErrSessionGone)
		p.release(key, s, !died && !isDone(s))
		if !errors.Is(err, ErrDied) || redo || ctx.Err() != nil {
			return resp, err
		}
		opts.Resume = cmp.Or(resp.Session, s.SessionID(), opts.Resume)
		p.log.Warn("live process died mid-turn; restarting it and redoing the turn", "key", key, "pid", s.PID(), "session", opts.Resume, "err", err)
		if req.OnEvent != nil {
			req.OnEvent(modelcli.Event{Time: time.Now().UTC(), Kind: modelcli.EventProgress,
				Text: fmt.Sprintf("the CLI process %d died mid-turn; restarting it (resuming %s) and redoing the turn", s.PID(), opts.Resume)})
		}
	}
}

// Stats lists the open sessions.
func (p *Pool) Stats() []Stat {
	c := make(chan []Stat, 1)
	select {
	case p.stat <- c:
		return <-c
	case <-p.closed:
		return nil
	}
}

// Close stops every session and the pool's goroutine, and waits for the
// processes to end.
func (p *Pool) Close() {
	select {
	case <-p.closing:
	default:
		close(p.closing)
	}
	<-p.closed
	p.stops.Wait()
}

func (p *Pool) acquire(ctx context.Context, key string, opts Options) (Session, error) {
	r := getReq{key: key, opts: opts, reply: make(chan getReply, 1)}
	select {
	case p.get <- r:
	case <-p.closed:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	g := <-r.reply
	return g.sess, g.err
}

func (p *Pool) release(key string, s Session, keep bool) {
	select {
	case p.put <- putReq{key: key, sess: s, keep: keep}:
	case <-p.closed:
	}
}

func isDone(s Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// loop owns the sessions: it hands them out, takes them back, and stops
// those idle too long.
func (p *Pool) loop() {
	defer close(p.closed)
	defer p.use.sessions.store(nil)
	m := make(map[string]*entry)
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for {
		p.arm(idle, m)
		p.use.sessions.store(stats(m)) // for Live, which does not wait for this loop
		select {
		case <-p.closing:
			for k := range m {
				p.stop(m, k, "closing")
			}
			return
		case r := <-p.get:
			s, err := p.take(m, r.key, r.opts)
			r.reply <- getReply{sess: s, err: err}
		case r := <-p.put:
			e, ok := m[r.key]
			if !ok || e.sess != r.sess {
				p.closeLater(r.sess) // not the key's (cannot be: it was busy)
				continue
			}
			e.busy, e.used = false, time.Now()
			if !r.keep || e.oneOff {
				p.stop(m, r.key, "turn ended its process")
			}
		case c := <-p.stat:
			c <- stats(m)
		case <-idle.C:
			now := time.Now()
			for k, e := range m {
				if !e.busy && now.Sub(e.used) >= p.cfg.Idle {
					p.stop(m, k, "idle")
				}
			}
		}
	}
}

// arm sets t to fire when the first idle session has been idle too long.
func (p *Pool) arm(t *time.Timer, m map[string]*entry) {
	next := time.Hour
	for _, e := range m {
		if !e.busy {
			next = min(next, time.Until(e.used.Add(p.cfg.Idle)))
		}
	}
	t.Reset(max(next, 0))
}

// take returns key's session, marked busy: the warm one, or a new one
// (resuming the dead one's session), after stopping the least recently
// used idle sessions past Max.
func (p *Pool) take(m map[string]*entry, key string, opts Options) (Session, error) {
	if e, ok := m[key]; ok {
		switch {
		case e.busy:
			return nil, fmt.Errorf("live: session %q is running a turn", key)
		case isDone(e.sess):
			opts.Resume = cmp.Or(e.sess.SessionID(), opts.Resume)
			p.log.Warn("live process ended between turns; restarting it", "key", key, "pid", e.sess.PID(), "session", opts.Resume)
			p.stop(m, key, "exited")
		case len(opts.AllowTools) > 0:
			opts.Resume = cmp.Or(e.sess.SessionID(), opts.Resume)
			p.stop(m, key, "a turn with granted rules")
		case !sameVars(p.cfg.Sticky, e.env, opts.Env):
			opts.Resume = cmp.Or(e.sess.SessionID(), opts.Resume)
			p.stop(m, key, "a turn with other sticky variables")
		default:
			e.busy = true
			return e.sess, nil
		}
	}
	for len(m) >= p.cfg.Max {
		k, ok := lru(m)
		if !ok {
			break
		}
		p.stop(m, k, "least recently used")
	}
	s, err := p.start.Start(context.Background(), opts)
	if err != nil {
		return nil, fmt.Errorf("live: start: %w", err)
	}
	p.log.Info("live process started", "key", key, "pid", s.PID(), "resume", opts.Resume)
	m[key] = &entry{sess: s, env: opts.Env, busy: true, oneOff: len(opts.AllowTools) > 0, used: time.Now()}
	return s, nil
}

// sameVars reports whether a and b (KEY=VALUE lists, the last setting
// winning) give each of keys the same value.
func sameVars(keys, a, b []string) bool {
	for _, k := range keys {
		if envValue(a, k) != envValue(b, k) {
			return false
		}
	}
	return true
}

func envValue(env []string, key string) string {
	for _, kv := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// lru is the key of the least recently used idle session.
func lru(m map[string]*entry) (string, bool) {
	var key string
	var at time.Time
	for k, e := range m {
		if !e.busy && (key == "" || e.used.Before(at)) {
			key, at = k, e.used
		}
	}
	return key, key != ""
}

// stop removes key's session and stops its process in the background.
func (p *Pool) stop(m map[string]*entry, key, why string) {
	e := m[key]
	delete(m, key)
	p.log.Info("live process stopped", "key", key, "pid", e.sess.PID(), "why", why)
	p.closeLater(e.sess)
}

// closeLater closes s in the background; Close waits for it.
func (p *Pool) closeLater(s Session) {
	p.stops.Add(1)
	go func() {
		defer p.stops.Done()
		s.Close()
	}()
}

func stats(m map[string]*entry) []Stat {
	out := make([]Stat, 0, len(m))
	for k, e := range m {
		out = append(out, Stat{Key: k, PID: e.sess.PID(), Session: e.sess.SessionID(), Busy: e.busy, Used: e.used})
	}
	slices.SortFunc(out, func(a, b Stat) int { return strings.Compare(a.Key, b.Key) })
	return out
}
