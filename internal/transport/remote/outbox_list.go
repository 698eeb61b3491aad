package remote

import (
	"bytes"
	"encoding/json"
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
