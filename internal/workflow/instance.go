package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
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
	// Stopped are the agents (ids) stopped on their own while the others
	// run on (an agent's stop file, see [AgentStopNameBy]).
	Stopped []string `json:"stopped,omitempty"`
	// Store is the private tree of an instance whose context is kept in
	// memory (context.provider: memory): its channel, documents,
	// presence and jobs, removed when the instance ends ("": the tree).
	Store string `json:"store,omitempty"`

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

// CheckFile reports whether the workflow file at path (relative to dir
// when not absolute), which collab resume is about to run unattended as
// uid, could have been changed by another account since it was started:
// it must be a regular file owned by uid or root and writable by no one
// else, in a folder that is owned by uid or root and, when others may
// write it, sticky (else the file could be replaced). The error wraps
// sessions.ErrUnsafe and says what to fix. (An interactive run is not
// checked: the person runs the file they chose, now.)
func CheckFile(dir, path string, uid int) error {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("workflow file: %w", err)
		}
		owner, _, ok := safedir.Ownership(fi)
		m := fi.Mode()
		switch {
		case !ok:
		case p == path && !m.IsRegular():
			return fmt.Errorf("workflow file %s is not a regular file: %w", p, sessions.ErrUnsafe)
		case owner != uid && owner != 0:
			return fmt.Errorf("%s is owned by uid %d, not this account (uid %d) or root, who could change the workflow resume runs: %w", p, owner, uid, sessions.ErrUnsafe)
		case p == path && m.Perm()&0o022 != 0:
			return fmt.Errorf("workflow file %s (mode %v) is writable by others, who could change what resume runs: %w; chmod go-w it after checking its contents", p, m, sessions.ErrUnsafe)
		case p != path && m.Perm()&0o022 != 0 && m&fs.ModeSticky == 0:
			return fmt.Errorf("the folder %s (mode %v) of the workflow file lets others replace it: %w; chmod go-w it, or keep the file elsewhere", p, m, sessions.ErrUnsafe)
		}
	}
	return nil
}

// StoreRoot is the tree that holds the channel, documents, presence and
// jobs of r's instance: its Store when that is an absolute path, else
// root.
func StoreRoot(root tree.Root, r Record) tree.Root {
	if r.Store != "" && filepath.IsAbs(r.Store) {
		return tree.Root(r.Store)
	}
	return root
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

// ErrStopNotAllowed is wrapped when an account may not stop an instance
// ([MayStop]).
var ErrStopNotAllowed = errors.New("workflow: not allowed to stop this instance")

// MayStop reports whether the account uid may stop an instance run by the
// account runner (its record's owner): that account, root, or the tree's
// owner (the admin who ran 'collab init'). Any other member of the tree's
// group may not, as it may not kill another's job (package jobs): the
// error wraps [ErrStopNotAllowed]. This is the one rule; collab stop, the
// dashboard and the running instance (by the stop file's owner) all ask
// it.
func MayStop(root tree.Root, runner, uid int) error {
	if uid == runner || uid == 0 || uid == keyring.Owner(string(root)) {
		return nil
	}
	return fmt.Errorf("%w: it runs as uid %d; only that account, root or the tree's owner may stop it", ErrStopNotAllowed, runner)
}

// RunnerOf is the account that runs the instance of r: its record file's
// owner (-1 when unknown).
func RunnerOf(r Record) int {
	if !r.file.Set() {
		return -1
	}
	return r.file.UID
}

// StopNameBy is the name in ROOT/workflows of the stop file that the
// account uid writes for an instance: one per account, so that no
// account's stop file (which the sticky folder keeps from every other
// account) stands in another's way.
func StopNameBy(name, instance string, uid int) string { return stopNameBy(name+Sep+instance, uid) }

// RequestStop writes this account's stop file of instance of workflow
// name ([StopNameBy]); data says who asked (free-form JSON, for people).
// The instance honours it only when this account may stop it ([MayStop]).
func RequestStop(root tree.Root, name, instance string, data []byte) error {
	d, err := safedir.Create(root.Workflows())
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Replace(StopNameBy(name, instance, os.Geteuid()), data, sessions.RecordPerm)
}

// stopFiles are the stop files an instance (or one agent of it) run by
// runner honours: those of the accounts that may stop it ([MayStop]:
// runner, root, the tree's owner), each named base.UID.stop, and the
// shared name (when not "") that older collabs write, by whoever owns it.
func stopFiles(root tree.Root, base, shared string, runner int) []string {
	var files []string
	if shared != "" {
		files = append(files, shared)
	}
	for _, uid := range []int{runner, 0, keyring.Owner(string(root))} {
		if f := stopNameBy(base, uid); uid >= 0 && !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	return files
}

// stopNameBy is the stop file of base written by the account uid.
func stopNameBy(base string, uid int) string { return base + "." + strconv.Itoa(uid) + ".stop" }

// stopFileOK reports whether the stop file fi, named file, is one the
// instance honours: written by an account that may stop it, and, when
// named for an account, by that account.
func stopFileOK(root tree.Root, base, shared, file string, fi fs.FileInfo, runner int) error {
	uid, _, ok := safedir.Ownership(fi)
	if !ok || !fi.Mode().IsRegular() {
		return fmt.Errorf("stop file %s is not a regular file", file)
	}
	if (shared == "" || file != shared) && file != stopNameBy(base, uid) {
		return fmt.Errorf("stop file %s is owned by uid %d, not the account it names", file, uid)
	}
	if err := MayStop(root, runner, uid); err != nil {
		return fmt.Errorf("stop file %s of uid %d: %w", file, uid, err)
	}
	return nil
}

// ClearStop removes the stop files of instance of workflow name that a
// run by runner would honour, left from an earlier run of the same
// instance (a new run calls it once it owns the instance's record). One
// it would honour but cannot remove (the admin's, in the sticky folder)
// is an error that names it and its owner; one it would not honour is
// left alone.
func ClearStop(root tree.Root, name, instance string, runner int) error {
	return clearStop(root, name+Sep+instance, StopName(name, instance), runner)
}

func clearStop(root tree.Root, base, shared string, runner int) error {
	d, err := safedir.Open(root.Workflows())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	for _, file := range stopFiles(root, base, shared, runner) {
		fi, err := d.Lstat(file)
		if err != nil || stopFileOK(root, base, shared, file, fi, runner) != nil {
			continue
		}
		if err := d.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			uid, _, _ := safedir.Ownership(fi)
			return fmt.Errorf("a stop file of an earlier run of this instance, %s/%s, is uid %d's and cannot be removed: %w; its owner (or root) removes it, or run another --instance", d.Path(), file, uid, err)
		}
	}
	return nil
}

// StopRequested reports whether instance of workflow name, run by the
// account runner, has a stop file it honours (written by an account that
// may stop it, [MayStop]), and removes it. A stop file under the shared
// name by an account that may not is no request: refused is then its
// error (for the log).
func StopRequested(root tree.Root, name, instance string, runner int) (stop bool, refused error) {
	return stopRequested(root, name+Sep+instance, StopName(name, instance), runner)
}

func stopRequested(root tree.Root, base, shared string, runner int) (stop bool, refused error) {
	d, err := safedir.Open(root.Workflows())
	if err != nil {
		return false, nil
	}
	defer d.Close()
	for _, file := range stopFiles(root, base, shared, runner) {
		fi, err := d.Lstat(file)
		if err != nil {
			continue
		}
		if err := stopFileOK(root, base, shared, file, fi, runner); err != nil {
			refused = err
			continue
		}
		d.Remove(file)
		return true, nil
	}
	return false, refused
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
