package watcher

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

const stateFile = "watch.json"

// state is what a watcher keeps in ROOT/state/AGENT/watch.json so that a
// restart answers what arrived while it was down, each message once.
type state struct {
	Version  int                       `json:"version"`
	Saved    time.Time                 `json:"saved"`
	Channels map[string]channel.Cursor `json:"channels"`
	// Pending are messages for the agent not yet handled, oldest first.
	Pending []ref `json:"pending"`
	// Noticed are threads that already got a guard notice.
	Noticed map[string]time.Time `json:"noticed,omitempty"`
	// Budget is what the CLI runs cost today.
	Budget budget `json:"budget,omitzero"`
	// Awaiting are jobs that asked a question, by session key.
	Awaiting map[string]question `json:"awaiting,omitempty"`
}

// question is a job waiting for its asker's answer.
type question struct {
	Job   string `json:"job"`
	Asker string `json:"asker"`
	// Allow are the permission rules an answer that allows grants the
	// run that resumes the session (modelcli.Question.Allow).
	Allow []string `json:"allow,omitempty"`
}

// budget is the spending of one UTC day.
type budget struct {
	Day     string  `json:"day"` // YYYY-MM-DD, UTC
	Spent   float64 `json:"spent_usd"`
	Tokens  int64   `json:"tokens,omitempty"`
	Noticed bool    `json:"noticed,omitempty"` // the day's notice is posted
}

type ref struct {
	Channel string `json:"channel"`
	ID      string `json:"id"`
}

// The watcher's own files (watch.json, sessions.json, outbox entries) are
// sealed: written as
//
//	{"version": 2, "sha256": "HEX", "state": PAYLOAD}
//
// where HEX is the SHA-256 of PAYLOAD's compact JSON. A truncated or
// bit-flipped file either does not parse or does not match its sum; both
// are errCorrupt. Every single-bit flip is caught: one in PAYLOAD changes
// the sum, and one in the indentation turns a space or newline into a
// character JSON refuses. Files written before sealing (watch.json version
// 1, a bare sessions map) still load, unchecked.
const sealedVersion = 2

// errCorrupt is wrapped by the errors of files that are not what the
// watcher wrote: truncated, bit-flipped, or of an unknown version.
var errCorrupt = errors.New("watcher: corrupt state file")

type sealedFile struct {
	Version int             `json:"version"`
	SHA256  string          `json:"sha256"`
	State   json.RawMessage `json:"state"`
}

// seal returns the sealed form of v.
func seal(v any) ([]byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(payload)
	data, err := json.MarshalIndent(sealedFile{Version: sealedVersion, SHA256: hex.EncodeToString(sum[:]), State: payload}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// unseal returns the payload of a sealed file whose sum matches. A file
// that is a JSON object without a numeric version, or with a version older
// than sealing, is returned whole with sealed false: the caller decodes it
// as the old format. Anything else is an error that wraps errCorrupt.
func unseal(data []byte) (payload []byte, sealed bool, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, false, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	if top == nil {
		return nil, false, fmt.Errorf("%w: null", errCorrupt)
	}
	var version int
	raw, ok := top["version"]
	if !ok || json.Unmarshal(raw, &version) != nil {
		// No numeric version: the old sessions map (a channel may be
		// named "version", but its value is an object).
		return data, false, nil
	}
	switch {
	case version >= 1 && version < sealedVersion:
		return data, false, nil
	case version != sealedVersion:
		return nil, false, fmt.Errorf("%w: unknown version %d", errCorrupt, version)
	}
	var f sealedFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, false, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	if len(f.State) == 0 {
		return nil, false, fmt.Errorf("%w: no state", errCorrupt)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, f.State); err != nil {
		return nil, false, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	sum := sha256.Sum256(compact.Bytes())
	if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
		return nil, false, fmt.Errorf("%w: checksum mismatch (file says %.16q, content is %.16s…)", errCorrupt, f.SHA256, got)
	}
	return compact.Bytes(), true, nil
}

// corruptError reports a state file that was unreadable as data and has
// been set aside.
type corruptError struct {
	path  string // the file
	aside string // its new name, "" if it could not be moved
	err   error  // what is wrong with it
	move  error  // why it could not be moved
}

func (e *corruptError) Error() string {
	if e.aside == "" {
		return fmt.Sprintf("%s: %v (could not set it aside: %v)", e.path, e.err, e.move)
	}
	return fmt.Sprintf("%s: %v; kept as %s", e.path, e.err, e.aside)
}

func (e *corruptError) Unwrap() error { return e.err }

// setAside renames a corrupt file of d to NAME.corrupt-TIMESTAMP (never
// replacing an earlier one) so that it can be examined, and returns a
// corruptError describing it.
func setAside(d *safedir.Dir, name string, now time.Time, bad error) error {
	return setAsideAs(d, name, "corrupt", now, bad)
}

// setAsideAs is setAside with another word than corrupt in the name.
func setAsideAs(d *safedir.Dir, name, why string, now time.Time, bad error) error {
	ce := &corruptError{path: d.Path() + "/" + name, err: bad}
	base := name + "." + why + "-" + now.UTC().Format("20060102T150405Z")
	for i := 0; i < 100; i++ {
		aside := base
		if i > 0 {
			aside = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := d.Lstat(aside); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if ce.move = d.Rename(name, aside); ce.move == nil {
			ce.aside = aside
		}
		return ce
	}
	ce.move = errors.New("too many corrupt copies")
	return ce
}

// privateState opens the agent's state folder, ROOT/state/AGENT, making it
// when missing, as a folder only this account can write
// (safedir.CreatePrivate): nothing an agent signs may come from a file
// another account could have put there (an outbox entry is posted signed
// as the agent). One owned by another account is an error wrapping
// safedir.ErrNotPrivate, and the watcher does not start.
func privateState(root tree.Root, agent string) (*safedir.Dir, error) {
	return safedir.CreatePrivate(root.State(agent))
}

// checkPrivate makes sure the agent's state folder and its outbox are
// this account's alone before anything is read from them: one owned by
// another account stops the watcher (an error wrapping
// safedir.ErrNotPrivate that says what to do). Other errors (a folder
// that cannot be made now) are left to the reads and writes that follow,
// which log them and carry on.
func (w *watcher) checkPrivate() error {
	d, err := privateState(w.cfg.Root, w.cfg.Agent)
	if err == nil {
		d.Close()
		d, err = safedir.OpenPrivate(w.outboxPath())
	}
	if err == nil {
		d.Close()
	}
	if errors.Is(err, safedir.ErrNotPrivate) {
		return fmt.Errorf("refusing the agent's state: %w", err)
	}
	return nil
}

// readOwn reads the file name of the private folder d, at most limit
// bytes. One that another account could have written (safedir.CheckOwn)
// is set aside as NAME.untrusted-TIMESTAMP, never read, and reported with
// an error wrapping safedir.ErrNotPrivate.
func readOwn(d *safedir.Dir, name string, limit int64, now time.Time) ([]byte, error) {
	data, fi, err := d.ReadFile(name, limit)
	if fi != nil {
		if oerr := safedir.CheckOwn(d.Path()+"/"+name, fi); oerr != nil {
			return nil, setAsideAs(d, name, "untrusted", now, oerr)
		}
	}
	return data, err
}

// loadState reads the agent's state. A missing file is (nil, nil). A file
// that is not what a watcher wrote (truncated, bit-flipped, unknown
// version) is renamed watch.json.corrupt-TIMESTAMP and reported with an
// error wrapping errCorrupt; an unreadable one (permissions, I/O) is an
// error left in place.
//
// The state is the agent's alone (see privateState): a file in it that
// another account could have written is set aside as
// watch.json.untrusted-TIMESTAMP, unread, and reported with an error
// wrapping safedir.ErrNotPrivate.
func loadState(root tree.Root, agent string, now time.Time) (*state, error) {
	d, err := safedir.Open(root.State(agent))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	defer d.Close()
	data, err := readOwn(d, stateFile, 64<<20, now)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	s, err := decodeState(data)
	if err != nil {
		return nil, setAside(d, stateFile, now, err)
	}
	return s, nil
}

// decodeState decodes watch.json, sealed or of version 1.
func decodeState(data []byte) (*state, error) {
	payload, sealed, err := unseal(data)
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(payload, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	if !sealed && s.Version != 1 {
		return nil, fmt.Errorf("%w: unknown version %d", errCorrupt, s.Version)
	}
	return &s, nil
}

func saveState(root tree.Root, agent string, s *state) error {
	s.Version = 1 // of the payload; the file's is sealedVersion
	data, err := seal(s)
	if err != nil {
		return err
	}
	d, err := privateState(root, agent)
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	defer d.Close()
	if err := d.Replace(stateFile, data, 0o644); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// save writes the state file.
func (w *watcher) save() {
	st := &state{
		Saved:    w.now(),
		Budget:   w.budget,
		Awaiting: w.awaiting,
		Channels: make(map[string]channel.Cursor, len(w.readers)),
		Noticed:  w.guards.noticed,
	}
	for ch, r := range w.readers {
		st.Channels[ch] = r.Cursor()
	}
	if w.busy != nil {
		st.Pending = append(st.Pending, w.busy.it.ref())
	}
	for _, it := range w.queue {
		st.Pending = append(st.Pending, it.ref())
	}
	if err := saveState(w.cfg.Root, w.cfg.Agent, st); err != nil {
		w.logOnce("state", "cannot save state", keyErr, err)
		return
	}
	w.dirty = false
}
