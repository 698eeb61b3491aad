package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/transport/bridge"
)

// Outbox folder names under the state directory.
const (
	OutboxDir = "outbox"
	FailedDir = "failed" // under OutboxDir
)

// maxEntry bounds the size of an entry read back: a message at its limit
// plus the request around it.
const maxEntry = channel.MaxMessageSize + 64<<10

// Entry is one write in the outbox.
type Entry struct {
	Name    string          `json:"-"` // the file's name
	Op      string          `json:"op"`
	Body    json.RawMessage `json:"body"`
	Queued  time.Time       `json:"queued"`
	Refused string          `json:"refused,omitempty"` // in failed/: the bridge's answer
	// Renew marks a post the client sealed for a sender (Client.Post): if
	// another message took its id, it is sealed again under a new one. A
	// post without it (a watcher's reply, carried by the mirror) keeps its
	// id: a reply token reserved that id on the mount, so a conflict means
	// the message is there another way, and a renamed copy would be a
	// second reply. It goes to failed/.
	Renew bool `json:"renew,omitempty"`
}

// Describe returns what the entry writes, for listings: the channel and
// id of a post, the agent and job of a kill.
func (e Entry) Describe() string {
	switch e.Op {
	case bridge.OpPost:
		var r bridge.PostRequest
		if json.Unmarshal(e.Body, &r) == nil {
			var m struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(r.Message, &m)
			return r.Channel + " " + m.ID
		}
	case bridge.OpKill:
		var r bridge.KillRequest
		if json.Unmarshal(e.Body, &r) == nil {
			return r.Of + " " + r.Job
		}
	}
	return ""
}

// outbox is the folder of an agent's unacknowledged writes.
type outbox struct {
	dir string
	now func() time.Time
}

// add publishes a new entry atomically and returns it.
func (o outbox) add(op string, body []byte, renew bool) (Entry, error) {
	t := o.now()
	e := Entry{Op: op, Body: body, Queued: t.UTC(), Renew: renew}
	e.Name = fmt.Sprintf("%020d-%s-%s.json", t.UnixNano(), op, randhex.String(4))
	data, err := json.Marshal(e)
	if err != nil {
		return Entry{}, err
	}
	d, err := safedir.Create(o.dir)
	if err != nil {
		return Entry{}, fmt.Errorf("outbox: %w", err)
	}
	defer d.Close()
	if err := d.Publish(e.Name, data, 0o600); err != nil {
		return Entry{}, fmt.Errorf("outbox: %w", err)
	}
	return e, nil
}

// path returns an entry's file.
func (o outbox) path(name string) string { return filepath.Join(o.dir, name) }

// remove deletes a delivered entry; one already gone (another process
// delivered it) is fine.
func (o outbox) remove(name string) error {
	d, err := safedir.Open(o.dir)
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	defer d.Close()
	if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

// fail moves a refused entry to failed/ with the reason, then removes it
// from the outbox. A crash in between leaves both; the next refusal of the
// same entry finds failed/ has it and only removes it.
func (o outbox) fail(e Entry, reason string) (string, error) {
	e.Refused = reason
	data, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	fdir := filepath.Join(o.dir, FailedDir)
	d, err := safedir.Create(fdir)
	if err != nil {
		return "", fmt.Errorf("outbox: %w", err)
	}
	defer d.Close()
	if err := d.Publish(e.Name, data, 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("outbox: %w", err)
	}
	return filepath.Join(fdir, e.Name), o.remove(e.Name)
}

// list returns the entries of dir, oldest first. Temp files (dot-files)
// and folders are not entries; an entry that cannot be read is returned
// with an empty Op, for the caller to move aside.
func list(dir string) ([]Entry, error) {
	d, err := safedir.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	defer d.Close()
	des, err := d.ReadDir()
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	var out []Entry
	for _, de := range des {
		name := de.Name()
		if de.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		e := Entry{Name: name}
		data, _, err := d.ReadFile(name, maxEntry)
		if errors.Is(err, fs.ErrNotExist) {
			continue // delivered meanwhile by another process
		}
		if err == nil {
			err = json.Unmarshal(data, &e)
		}
		if err != nil || !bridge.KnownOp(e.Op) || len(e.Body) == 0 {
			e.Op = ""
		}
		e.Name = name
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
