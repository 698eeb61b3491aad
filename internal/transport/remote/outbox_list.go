package remote

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// Listing is the outbox of a state directory, as collab outbox ls shows
// it: the writes waiting for the bridge and those it refused, oldest
// first.
type Listing struct {
	Waiting, Failed []Entry
}

// List reads the outbox of the state directory stateDir without a
// connection.
func List(stateDir string) (Listing, error) {
	waiting, err := Pending(stateDir)
	if err != nil {
		return Listing{}, err
	}
	failed, err := Refused(stateDir)
	if err != nil {
		return Listing{}, err
	}
	return Listing{Waiting: waiting, Failed: failed}, nil
}

// Empty reports whether nothing waits and nothing was refused.
func (l Listing) Empty() bool { return len(l.Waiting)+len(l.Failed) == 0 }

// Lines is the listing as collab outbox ls prints it, one line per
// entry: waiting or failed, the operation, what it writes, when it was
// queued and, for a refused one, why. What comes from a file is made
// printable.
func (l Listing) Lines() []string {
	var out []string
	for i, entries := range [][]Entry{l.Waiting, l.Failed} {
		for _, e := range entries {
			op := "-"
			if e.Op != "" {
				op = tree.Printable(e.Op)
			}
			line := fmt.Sprintf("%s  %s  %s  %s", []string{"waiting", "failed"}[i], op, tree.Printable(e.Describe()), presence.FormatTime(e.Queued))
			if e.Refused != "" {
				line += "  " + tree.Printable(e.Refused)
			}
			out = append(out, line)
		}
	}
	return out
}

// Queued is nil when c's outbox is empty, else an errkind.Queued error
// saying how many writes still wait (after a Flush: the bridge could not
// be reached).
func (c *Client) Queued() error {
	left, err := c.Outbox()
	switch {
	case err != nil:
		return err
	case len(left) > 0:
		return errkind.New(errkind.Queued, "%d write(s) still waiting in %s: the bridge cannot be reached", len(left), c.OutboxPath())
	}
	return nil
}

// MarshalJSON is {"waiting": [...], "failed": [...]}, each entry with its
// file's name.
func (l Listing) MarshalJSON() ([]byte, error) {
	type entry struct {
		Entry
		File string `json:"file"`
	}
	out := map[string][]entry{"waiting": {}, "failed": {}}
	for _, e := range l.Waiting {
		out["waiting"] = append(out["waiting"], entry{e, e.Name})
	}
	for _, e := range l.Failed {
		out["failed"] = append(out["failed"], entry{e, e.Name})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as the command prints the rest
	err := enc.Encode(out)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}
