package workflow

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"collab/internal/plumbing/safedir"
	"collab/internal/plumbing/tree"
	"collab/internal/workspace/sessions"
)

// Statuses of an instance record, as written.
const (
	Starting = "starting"
	Running  = "running"
	Done     = "done"
	Failed   = "failed"
	Stopped  = "stopped"
	Timeout  = "timeout"
)

// Record is an instance record, ROOT/workflows/WORKFLOW--INSTANCE.json
// (see the package doc).
type Record struct {
	Name     string    `json:"name"`
	Instance string    `json:"instance"`
	File     string    `json:"file"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	Status   string    `json:"status"`
	Agents   []string  `json:"agents"`
	Channel  string    `json:"channel"`
	Finished time.Time `json:"finished,omitzero"`
	// Args are the arguments of a detached collab start (--background)
	// and Dir its working folder: what collab resume runs again.
	Args []string `json:"args,omitempty"`
	Dir  string   `json:"dir,omitempty"`

	file sessions.FileStat // what readRecord saw of its file
}

// maxRecord bounds a record read.
const maxRecord = 1 << 20

// RecordName is the record's file name in ROOT/workflows.
func RecordName(name, instance string) string { return name + Sep + instance + ".json" }

// StopName is the stop file's name in ROOT/workflows.
func StopName(name, instance string) string { return name + Sep + instance + ".stop" }

// WriteRecord writes r atomically (replacing the previous version).
// Records and stop files are written with mode sessions.RecordPerm
// (0644 at most, whatever the umask): only their owner can change them.
func WriteRecord(root tree.Root, r *Record) error {
	return writeRecord(root, r, (*safedir.Dir).Replace)
}

// CreateRecord writes r only if the instance has no record yet, atomically:
// of two runs of one instance started at the same moment, one creates it
// and the other gets an error wrapping fs.ErrExist.
func CreateRecord(root tree.Root, r *Record) error {
	return writeRecord(root, r, (*safedir.Dir).Publish)
}

func writeRecord(root tree.Root, r *Record, write func(*safedir.Dir, string, []byte, fs.FileMode) error) error {
	d, err := safedir.Create(root.Workflows())
	if err != nil {
		return fmt.Errorf("instance record: %w", err)
	}
	defer d.Close()
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := write(d, RecordName(r.Name, r.Instance), append(data, '\n'), sessions.RecordPerm); err != nil {
		return fmt.Errorf("instance record: %w", err)
	}
	return nil
}

// RemoveRecord removes the record of instance of workflow name.
func RemoveRecord(root tree.Root, name, instance string) error {
	d, err := safedir.Open(root.Workflows())
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Remove(RecordName(name, instance))
}

// ReadRecord reads the record of instance of workflow name.
func ReadRecord(root tree.Root, name, instance string) (Record, error) {
	d, err := safedir.Open(root.Workflows())
	if err != nil {
		return Record{}, err
	}
	defer d.Close()
	return readRecord(d, RecordName(name, instance))
}

func readRecord(d *safedir.Dir, file string) (Record, error) {
	data, fi, err := d.ReadFile(file, maxRecord)
	if err != nil {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("instance record %s: %w", file, err)
	}
	if r.Name == "" || r.Instance == "" {
		return Record{}, fmt.Errorf("instance record %s: no name or instance", file)
	}
	if RecordName(r.Name, r.Instance) != file {
		return Record{}, fmt.Errorf("instance record %s: it is of %s%s%s", file, r.Name, Sep, r.Instance)
	}
	r.file = sessions.StatOf(fi)
	return r, nil
}

// CheckRecord refuses r unless the account uid may act on it: run what
// it records (collab resume) or put it back (a run that failed to start).
// As a delegation's record (sessions.Check): the file r was read from
// ([ReadRecord], [Records]) must be uid's, a regular file, writable by
// no one else, with one name; the refusal is a *sessions.RecordError
// wrapping sessions.ErrForeign or sessions.ErrUnsafe.
func CheckRecord(root tree.Root, r *Record, uid int) error {
	return r.file.Check(filepath.Join(root.Workflows(), RecordName(r.Name, r.Instance)), uid)
}

// Records reads every instance record; one that cannot be read is
// skipped. No folder is no records.
func Records(root tree.Root) ([]Record, error) {
	var out []Record
	err := safedir.EachFile(root.Workflows(), ".json", func(d *safedir.Dir, name string) {
		if r, err := readRecord(d, name); err == nil {
			out = append(out, r)
		}
	})
	return out, err
}

// RequestStop writes the stop file of instance of workflow name; data
// says who asked (free-form JSON, for people).
func RequestStop(root tree.Root, name, instance string, data []byte) error {
	d, err := safedir.Create(root.Workflows())
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Replace(StopName(name, instance), data, sessions.RecordPerm)
}

// StopRequested reports whether the stop file of instance of workflow
// name exists, and removes it.
func StopRequested(root tree.Root, name, instance string) bool {
	d, err := safedir.Open(root.Workflows())
	if err != nil {
		return false
	}
	defer d.Close()
	file := StopName(name, instance)
	if _, err := d.Lstat(file); err != nil {
		return false
	}
	d.Remove(file)
	return true
}

// Aliases returns the names by which agents of workflow instances are
// addressed in channel ch: alias (the agent's NAME) → agent id
// (NAME--INSTANCE), from the records whose channel is ch. When two
// instances share ch (context.channel), the one started last wins. Its
// cost is one read of each record (ROOT/workflows), never a channel's.
func Aliases(root tree.Root, ch string) map[string]string {
	recs, _ := Records(root)
	return aliasesIn(recs, ch)
}

func aliasesIn(recs []Record, ch string) map[string]string {
	var out map[string]string
	started := map[string]time.Time{}
	for _, r := range recs {
		if r.Channel != ch {
			continue
		}
		for _, id := range r.Agents {
			name, _, ok := SplitAgentID(id)
			if !ok {
				continue
			}
			if _, dup := out[name]; dup && r.Started.Before(started[name]) {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[name], started[name] = id, r.Started
		}
	}
	return out
}

// AgentAliases returns, for the agent id, the channels in which it is also
// addressed by another name and those names (channel → aliases): its
// instance's channel and its NAME, from the records that list it.
func AgentAliases(root tree.Root, id string) map[string][]string {
	name, _, ok := SplitAgentID(id)
	if !ok {
		return nil
	}
	recs, _ := Records(root)
	var out map[string][]string
	for _, r := range recs {
		for _, a := range r.Agents {
			if a != id || r.Channel == "" {
				continue
			}
			if aliasesIn(recs, r.Channel)[name] != id {
				continue // another instance in this channel holds the name
			}
			if out == nil {
				out = map[string][]string{}
			}
			out[r.Channel] = []string{name}
		}
	}
	return out
}

// Display is how people see an agent id: an agent of a workflow instance,
// NAME--INSTANCE, as NAME@INSTANCE; any other id as it is.
func Display(id string) string {
	if name, instance, ok := SplitAgentID(id); ok {
		return name + "@" + instance
	}
	return id
}
