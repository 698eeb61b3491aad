package fswake

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fsnotify/fsnotify"
)

// queueLen is how many events a subscriber holds before it loses some
// (and is told to look at everything instead).
const queueLen = 64

// shared is the process's one fsnotify watcher.
var shared hub

// hub shares one fsnotify watcher among every Watch of the process: a
// folder is watched while at least one subscriber holds it, and the
// watcher is open while there is a subscriber at all. One goroutine per
// open watcher reads its events and hands each, without ever waiting, to
// the subscribers of the event's folder.
type hub struct {
	mu   sync.Mutex
	inst *instance                // nil: no subscriber, no watcher open
	subs map[string]set           // folder → its subscribers (while inst)
	held map[*sub]map[string]bool // subscriber → the folders it holds
}

type set map[*sub]struct{}

// instance is one open fsnotify watcher and the routes its reader
// follows: a copy made under hub.mu at each change, so that the reader
// takes no lock.
type instance struct {
	fw     *fsnotify.Watcher
	routes atomic.Pointer[map[string][]*sub]
}

// sub is one Watch's subscription.
type sub struct {
	events chan event    // queued for the Watch's loop
	lost   atomic.Bool   // events were dropped: look at everything
	kick   chan struct{} // (1) lost was set
	errc   chan error    // (1) the watcher failed
}

// event is a file created (create) or written in folder dir.
type event struct {
	dir, name string
	create    bool
}

func newSub() *sub {
	return &sub{events: make(chan event, queueLen), kick: make(chan struct{}, 1), errc: make(chan error, 1)}
}

// drop tells s that events were lost.
func (s *sub) drop() {
	s.lost.Store(true)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// subscribe makes s, holding dirs: each is watched from then on. A folder
// that cannot be watched is skipped when lax, else an error (and s
// holds nothing).
func (h *hub) subscribe(dirs []string, lax bool) (*sub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inst == nil {
		fw, err := fsnotify.NewBufferedWatcher(queueLen)
		if err != nil {
			return nil, fmt.Errorf("fsnotify: %w", err)
		}
		h.inst = &instance{fw: fw}
		h.subs, h.held = map[string]set{}, map[*sub]map[string]bool{}
		go h.inst.read()
	}
	s := newSub()
	h.held[s] = map[string]bool{}
	for _, dir := range dirs {
		if err := h.hold(s, dir); err != nil && !lax {
			if closing := h.release(s); closing != nil {
				defer closing.Close() // after the unlock: see unsubscribe
			}
			return nil, fmt.Errorf("fsnotify %s: %w", dir, err)
		}
	}
	h.publish()
	return s, nil
}

// add makes s hold dir too (a folder created in its Grow).
func (h *hub) add(s *sub, dir string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held[s] == nil {
		return nil // gone
	}
	err := h.hold(s, dir)
	h.publish()
	return err
}

// unsubscribe releases what s holds; a folder no one holds is no longer
// watched, and the watcher of no subscriber is closed.
func (h *hub) unsubscribe(s *sub) {
	h.mu.Lock()
	closing := h.release(s)
	h.mu.Unlock()
	if closing != nil {
		// Closed without the lock: Close waits for fsnotify's reader,
		// which may wait for ours, which takes no lock.
		_ = closing.Close()
	}
}

// hold adds dir to s's folders, watching it. Add is made even for a
// folder already watched: one removed and made again (a new inode) is
// watched anew. Called with h.mu held.
func (h *hub) hold(s *sub, dir string) error {
	dir = filepath.Clean(dir)
	if err := h.inst.fw.Add(dir); err != nil {
		return err
	}
	if h.subs[dir] == nil {
		h.subs[dir] = set{}
	}
	h.subs[dir][s] = struct{}{}
	h.held[s][dir] = true
	return nil
}

// release drops s and its folders, and returns the watcher to close
// when s was the last subscriber (nil otherwise). Called with h.mu held.
func (h *hub) release(s *sub) *fsnotify.Watcher {
	if _, ok := h.held[s]; !ok {
		return nil
	}
	for dir := range h.held[s] {
		delete(h.subs[dir], s)
		if len(h.subs[dir]) == 0 {
			delete(h.subs, dir)
			_ = h.inst.fw.Remove(dir) // an error: gone with its folder
		}
	}
	delete(h.held, s)
	if len(h.held) > 0 {
		h.publish()
		return nil
	}
	fw := h.inst.fw
	h.inst, h.subs, h.held = nil, nil, nil
	return fw
}

// publish hands the reader the routes as they now are. Called with h.mu
// held.
func (h *hub) publish() {
	routes := make(map[string][]*sub, len(h.subs))
	for dir, subs := range h.subs {
		routes[dir] = make([]*sub, 0, len(subs))
		for s := range subs {
			routes[dir] = append(routes[dir], s)
		}
	}
	h.inst.routes.Store(&routes)
}

// read hands each event to the subscribers of its folder until the
// watcher is closed. It never waits on a subscriber: one whose queue is
// full loses the event and is told to look at everything.
func (in *instance) read() {
	for {
		select {
		case ev, ok := <-in.fw.Events:
			if !ok {
				return
			}
			dir, name := filepath.Split(ev.Name)
			if !ev.Has(fsnotify.Create|fsnotify.Write) || strings.HasPrefix(name, ".") {
				continue
			}
			e := event{dir: filepath.Clean(dir), name: name, create: ev.Has(fsnotify.Create)}
			for _, s := range in.route()[e.dir] {
				select {
				case s.events <- e:
				default:
					s.drop()
				}
			}
		case err, ok := <-in.fw.Errors:
			if !ok {
				return
			}
			for _, subs := range in.route() {
				for _, s := range subs {
					if errors.Is(err, fsnotify.ErrEventOverflow) {
						s.drop() // events were lost: list now
						continue
					}
					select {
					case s.errc <- fmt.Errorf("fsnotify: %w", err):
					default:
					}
				}
			}
		}
	}
}

// route returns the routes last published.
func (in *instance) route() map[string][]*sub {
	if r := in.routes.Load(); r != nil {
		return *r
	}
	return nil
}
