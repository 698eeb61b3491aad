package watcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/collabdev/collab/internal/agent/watchconf"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Session scopes: which messages share one CLI session (watchconf's).
const (
	ScopeChannel = watchconf.ScopeChannel // one session per channel
	ScopeThread  = watchconf.ScopeThread  // one session per thread
	ScopeNone    = watchconf.ScopeNone    // a fresh session every time
)

const sessionsFile = "sessions.json"

// session is a CLI session the watcher may resume.
type session struct {
	CLI     string    `json:"cli"`
	ID      string    `json:"id"`
	Updated time.Time `json:"updated"`
}

// sessions are the agent's resumable CLI sessions by key, kept in
// ROOT/state/AGENT/sessions.json. Owned by the watcher's loop.
type sessions struct {
	root  tree.Root
	agent string
	cli   string
	scope string
	ttl   time.Duration
	m     map[string]session
}

// loadSessions reads sessions.json. A corrupt file is set aside (see
// setAside) and reported with an error; the sessions start empty.
func loadSessions(root tree.Root, agent, cli, scope string, ttl time.Duration, now time.Time) (*sessions, error) {
	s := &sessions{root: root, agent: agent, cli: cli, scope: scope, ttl: ttl, m: make(map[string]session)}
	d, err := safedir.Open(root.State(agent))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	defer d.Close()
	data, err := readOwn(d, sessionsFile, 4<<20, now)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	m, err := decodeSessions(data)
	if err != nil {
		return s, setAside(d, sessionsFile, now, err)
	}
	s.m = m
	return s, nil
}

// decodeSessions decodes sessions.json, sealed or a bare map (before
// sealing).
func decodeSessions(data []byte) (map[string]session, error) {
	payload, _, err := unseal(data)
	if err != nil {
		return nil, err
	}
	var m map[string]session
	if err := json.Unmarshal(payload, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	if m == nil {
		m = make(map[string]session)
	}
	return m, nil
}

// key is the session key of a message in channel ch and thread.
func (s *sessions) key(ch, thread string) string {
	switch s.scope {
	case ScopeThread:
		return ch + "/" + thread
	case ScopeNone:
		return ""
	default:
		return ch
	}
}

// get returns the session to resume for key, if one is fresh.
func (s *sessions) get(key string, now time.Time) string {
	if key == "" {
		return ""
	}
	v, ok := s.m[key]
	if !ok || v.CLI != s.cli || now.Sub(v.Updated) > s.ttl {
		return ""
	}
	return v.ID
}

// put records the session a run used; it saves at once, as a session is
// worth more than the cost of a write.
func (s *sessions) put(key, id string, now time.Time) error {
	if key == "" || id == "" {
		return nil
	}
	s.m[key] = session{CLI: s.cli, ID: id, Updated: now}
	for k, v := range s.m {
		if now.Sub(v.Updated) > s.ttl {
			delete(s.m, k)
		}
	}
	return s.save()
}

func (s *sessions) drop(key string) error {
	if _, ok := s.m[key]; !ok {
		return nil
	}
	delete(s.m, key)
	return s.save()
}

func (s *sessions) save() error {
	data, err := seal(s.m)
	if err != nil {
		return err
	}
	d, err := privateState(s.root, s.agent)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Replace(sessionsFile, data, 0o644)
}
