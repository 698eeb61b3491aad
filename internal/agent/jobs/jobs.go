// Package jobs keeps the record of every model run a watcher makes: who
// asked, which CLI and session, cost and tokens, and the run's normalised
// event stream (docs/protocol.md#the-shared-tree: ROOT/state/AGENT/jobs).
//
// # Files
//
//	ROOT/state/AGENT/jobs/JOB.json   the record, rewritten atomically as the run goes
//	ROOT/state/AGENT/jobs/JOB.kill   a request from any host to stop the run
//
// A job id is "job-" plus a UUIDv7 ([NewID]): time-ordered, and distinct
// for every run, so two agents answering one message, or a watcher running
// a message again after a restart, never share a record. The record keeps
// the message's channel and id ([ForMessage] finds the newest job of a
// message). Records of older watchers are named "job-" plus the message id;
// they are read and listed as any other. Only the watcher that runs a job writes its record; the
// running jobs and exactly the last [Keep] finished ones are kept (the last
// by when they ended): older records are removed when a job's record is
// first written and again each time a job ends, so the count holds
// whatever the order in which jobs start and end. A watcher may
// [Prepare] a record in memory and [Recorder.Persist] it once the CLI is
// started, so that no write delays the start. A kill file asks the
// watcher to stop the run; it notices the file within a poll and, when the
// requester may kill the job (see Who may kill a job), stops the run, which
// then ends with an error event and no reply.
//
// # Signed kill requests
//
// A kill file is {"by": REQUESTER, "host": HOST, "time": RFC3339, "signature": …}.
// A requester with a key signs it (package signing, kind "kill") over, in
// this order:
//
//	agent (whose job it is: the folder), job id (the file's name without
//	".kill"), by, host, time (as written)
//
// so a request copied to another job or agent does not verify.
//
// # Who may kill a job
//
// [MayKill] is the rule, and every door applies it to the job's record:
// the watcher to each kill file it finds (with the job it runs, in
// memory), collab jobs kill and the dashboard before they write one (they
// refuse up front, with [ErrNotAllowed], what the watcher would refuse),
// and the bridge to a remote agent's request. A job may be killed by
//
//   - its agent (by is the job's Agent);
//   - the sender of the message it answers (by is the job's From: the
//     watcher runs only messages its trust policy accepts, so From is
//     that policy's verdict on who asked);
//   - the tree's admin: a kill file owned by root or by the owner of the
//     tree's root folder ([Admin]), unless that is the account that runs
//     the job (on a single-account tree, and in a remote host's mirror,
//     where the mirror writes every kill file, only names count).
//
// A requester other than the admin must be authentic as by under the
// watcher's trust policy ([signing.Verifier.Accepts] on the request's
// verdict): under the default "known" a by with keys must verify and a by
// without keys is taken at its word; under "signed" every request must
// verify; under "any" none need (only the names count). So under "known" anyone who
// can write the jobs folder can kill a job in the name of its keyless
// asker, as they could already post a message in that name; give the
// asker a key to close that. A file that does not decode names no one, and only the admin's counts.
// The dashboard judges a person by the name they signed in as, never as
// the admin; the bridge judges a remote agent by the name its NATS user
// and signature prove, never as the admin.
//
// The watcher ignores a request it may not honour: it logs it ("kill
// request refused", with the job, the requester and the reason), reports
// the job's first forged one in its channel, and removes the file ([DismissKill]),
// so that one it may honour can be made: a kill file is published without
// replacing, and while another requester's is there a request fails with
// [ErrKillPending].
package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Keep is how many finished jobs stay on disk per agent.
const Keep = 20

// Status of a job.
const (
	Running       = "running"
	AwaitingInput = "awaiting_input"
	Completed     = "completed"
	Failed        = "failed"
	Killed        = "killed"
	// Interrupted is a job whose watcher died while it ran: written by
	// the watcher that runs its message again, and shown by [Watch.Status]
	// for a record still marked running whose watcher is gone.
	Interrupted = "interrupted"
)

const maxRecord = 8 << 20

// Job is a job's record.
type Job struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
	Host  string `json:"host"`
	// PID is the CLI's pid and its process group's id, and Boot the boot
	// id of Host when it ran: with both, a watcher that restarts after a
	// crash on the same host and boot ends a run its predecessor left.
	PID  int    `json:"pid,omitempty"`
	Boot string `json:"boot_id,omitempty"`
	// Instance is the id of the watcher that ran the job (a UUIDv7 made at
	// its start, the one in its presence and claims), and WatcherPID its
	// pid on Host: with them a reader tells a job whose watcher died.
	Instance   string `json:"instance,omitempty"`
	WatcherPID int    `json:"watcher_pid,omitempty"`
	// RerunOf is the job this one runs again: its watcher died before it
	// ended.
	RerunOf  string             `json:"rerun_of,omitempty"`
	Channel  string             `json:"channel"`
	Message  string             `json:"message"`
	From     string             `json:"from"`
	CLI      string             `json:"cli"`
	Session  string             `json:"session,omitempty"`
	Resumed  bool               `json:"resumed,omitempty"`
	Status   string             `json:"status"`
	Started  time.Time          `json:"started"`
	Ended    time.Time          `json:"ended,omitzero"`
	CostUSD  float64            `json:"cost_usd,omitempty"`
	Usage    modelcli.Usage     `json:"usage"`
	Reply    string             `json:"reply,omitempty"`
	Error    string             `json:"error,omitempty"`
	Question *modelcli.Question `json:"question,omitempty"`
	// Asked is the question message a live turn posted mid-run, while
	// the job awaits its answer (and after, for the record).
	Asked  string           `json:"asked,omitempty"`
	Events []modelcli.Event `json:"events"`
}

// NewID returns a new job id: "job-" and a UUIDv7.
func NewID() string { return "job-" + uuid.Must(uuid.NewV7()).String() }

// NewInstance returns a new watcher instance id, a UUIDv7.
func NewInstance() string { return uuid.Must(uuid.NewV7()).String() }

// ForMessage returns agent's newest job for message msgID of channel (the
// message's key, as in Job.Message); none is an error wrapping
// fs.ErrNotExist. It lists the agent's folder, which holds at most [Keep]
// finished jobs and the running ones.
func ForMessage(root tree.Root, agent, channel, msgID string) (Job, error) {
	all, err := List(root, agent)
	if err != nil {
		return Job{}, err
	}
	for _, j := range all { // newest first
		if j.Message == msgID && j.Channel == channel {
			return j, nil
		}
	}
	return Job{}, fmt.Errorf("job of %s for %s/%s: %w", agent, channel, msgID, fs.ErrNotExist)
}

// Done reports whether the job has ended. A job awaiting input has, when
// its run ended on the question (Ended set); a live turn waiting mid-run
// for its asker's answer (Ended unset) has not.
func (j *Job) Done() bool { return j.Status != Running && !j.AskingMidRun() }

// AskingMidRun reports whether the job is a live turn waiting, mid-run,
// for the answer to the question it asked (Asked names it).
func (j *Job) AskingMidRun() bool { return j.Status == AwaitingInput && j.Ended.IsZero() }

// Recorder writes one running job's record. Its methods are safe for
// concurrent use (events arrive from the CLI adapter's goroutine), and a nil
// Recorder records nothing.
type Recorder struct {
	root tree.Root
	now  func() time.Time

	mu      sync.Mutex
	job     Job
	written time.Time
	held    bool  // not yet persisted: changes stay in memory
	err     error // first write error, kept for Close
}

// minWriteGap bounds how often progress rewrites the record.
const minWriteGap = 500 * time.Millisecond

// Start creates the record of a new running job and prunes old records.
func Start(root tree.Root, j Job, now func() time.Time) (*Recorder, error) {
	r, err := Prepare(root, j, now)
	if err != nil {
		return nil, err
	}
	if err := r.Persist(); err != nil {
		return nil, err
	}
	return r, nil
}

// Prepare returns the Recorder of a new running job without touching the
// disk: events and updates are kept in memory until [Recorder.Persist]
// writes the record (and prunes old ones), so a watcher can start the CLI
// first and record it right after.
func Prepare(root tree.Root, j Job, now func() time.Time) (*Recorder, error) {
	if now == nil {
		now = time.Now
	}
	if err := errors.Join(tree.CheckName("agent", j.Agent), checkID(j.ID)); err != nil {
		return nil, err
	}
	j.Status = Running
	if j.Started.IsZero() {
		j.Started = now().UTC()
	}
	return &Recorder{root: root, now: now, job: j, held: true}, nil
}

// Persist prunes old records and writes this one; from then on every
// change is written as it happens. It returns the first write error. A
// second call only reports that error.
func (r *Recorder) Persist() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	held, agent := r.held, r.job.Agent
	r.mu.Unlock()
	if !held {
		return r.Err()
	}
	perr := prune(r.root, agent, Keep)
	r.mu.Lock()
	defer r.mu.Unlock()
	if perr != nil && r.err == nil {
		r.err = perr
	}
	r.held = false
	r.writeLocked()
	return r.err
}

// Event appends an event and rewrites the record (at most every half
// second for progress; at once for anything else).
func (r *Recorder) Event(e modelcli.Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = r.now().UTC()
	}
	r.job.Events = append(r.job.Events, e)
	switch e.Kind {
	case modelcli.EventProgress, modelcli.EventToolCall:
		if r.now().Sub(r.written) < minWriteGap {
			return
		}
	}
	r.writeLocked()
}

// Update changes the record under its lock and rewrites it.
func (r *Recorder) Update(f func(*Job)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.job)
	r.writeLocked()
}

// Finish ends the job with status and the run's response and error, and
// prunes the records beyond the last [Keep] finished.
func (r *Recorder) Finish(status string, resp modelcli.Response, runErr error) Job {
	if r == nil {
		return Job{}
	}
	j, persisted := r.finish(status, resp, runErr)
	if persisted {
		if err := prune(r.root, j.Agent, Keep); err != nil {
			r.mu.Lock()
			if r.err == nil {
				r.err = err
			}
			r.mu.Unlock()
		}
	}
	return j
}

func (r *Recorder) finish(status string, resp modelcli.Response, runErr error) (Job, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j := &r.job
	j.Status = status
	j.Ended = r.now().UTC()
	if resp.Session != "" {
		j.Session = resp.Session
	}
	j.CostUSD, j.Usage, j.Question = resp.CostUSD, resp.Usage, resp.Question
	if runErr != nil {
		j.Error = runErr.Error()
		if n := len(j.Events); n == 0 || j.Events[n-1].Kind != modelcli.EventError {
			j.Events = append(j.Events, modelcli.Event{Time: j.Ended, Kind: modelcli.EventError, Text: j.Error})
		}
	}
	r.writeLocked()
	return *j, !r.held
}

// Job returns a copy of the record as it stands.
func (r *Recorder) Job() Job {
	if r == nil {
		return Job{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.job
	j.Events = slices.Clone(j.Events)
	return j
}

// Err returns the first error writing the record, if any.
func (r *Recorder) Err() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) writeLocked() {
	if r.held {
		return // Persist writes everything at once
	}
	r.written = r.now()
	if err := save(r.root, &r.job); err != nil && r.err == nil {
		r.err = err
	}
}

func save(root tree.Root, j *Job) error {
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	d, err := safedir.CreateDropbox(root.Jobs(j.Agent))
	if err != nil {
		return fmt.Errorf("job %s: %w", j.ID, err)
	}
	defer d.Close()
	if err := d.Replace(j.ID+".json", data, 0o666); err != nil {
		return fmt.Errorf("job %s: %w", j.ID, err)
	}
	return nil
}

// prune removes finished records beyond the keep that ended last, and
// their kill files. A record another job adds while it runs is one it does
// not see: it then removes fewer, never one of the last keep, and that
// job's own prune, when it ends, removes the rest.
func prune(root tree.Root, agent string, keep int) error {
	all, err := List(root, agent)
	if err != nil {
		return err
	}
	var done []Job
	for _, j := range all {
		if j.Done() && j.Status != AwaitingInput {
			done = append(done, j)
		}
	}
	if len(done) <= keep {
		return nil
	}
	// The last to end first; a record without an end (one marked
	// interrupted) counts from its start.
	slices.SortStableFunc(done, func(a, b Job) int { return b.endedOrStarted().Compare(a.endedOrStarted()) })
	d, err := safedir.Open(root.Jobs(agent))
	if err != nil {
		return err
	}
	defer d.Close()
	for _, j := range done[keep:] {
		d.Remove(j.ID + ".json")
		d.Remove(j.ID + ".kill")
	}
	return nil
}

func (j *Job) endedOrStarted() time.Time {
	if j.Ended.IsZero() {
		return j.Started
	}
	return j.Ended
}

// openJobs checks agent and job id and opens agent's jobs folder: every
// look at one job's files starts so.
func openJobs(root tree.Root, agent, id string) (*safedir.Dir, error) {
	if err := errors.Join(tree.CheckName("agent", agent), checkID(id)); err != nil {
		return nil, err
	}
	return safedir.Open(root.Jobs(agent))
}

// checkID refuses ids that are not job ids (and so could name other files).
func checkID(id string) error {
	rest, ok := strings.CutPrefix(id, "job-")
	if !ok || rest == "" || len(id) > 200 || strings.ContainsAny(rest, "./\x00") {
		return fmt.Errorf("%w: job id %q", tree.ErrBadName, id)
	}
	for i := 0; i < len(rest); i++ {
		if !tree.NameByte(rest[i]) {
			return fmt.Errorf("%w: job id %q", tree.ErrBadName, id)
		}
	}
	return nil
}

// Read reads one job of agent.
func Read(root tree.Root, agent, id string) (Job, error) {
	d, err := openJobs(root, agent, id)
	if err != nil {
		return Job{}, err
	}
	defer d.Close()
	return read(d, id+".json")
}

func read(d *safedir.Dir, name string) (Job, error) {
	data, _, err := d.ReadFile(name, maxRecord)
	if err != nil {
		return Job{}, err
	}
	var j Job
	if err := json.Unmarshal(data, &j); err != nil {
		return Job{}, fmt.Errorf("job %s: %w", name, err)
	}
	return j, nil
}

// List returns agent's jobs, newest first. Unreadable records are left out.
func List(root tree.Root, agent string) ([]Job, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return nil, err
	}
	var out []Job
	err := safedir.EachFile(root.Jobs(agent), ".json", func(d *safedir.Dir, name string) {
		if checkID(strings.TrimSuffix(name, ".json")) != nil {
			return
		}
		if j, err := read(d, name); err == nil {
			out = append(out, j)
		}
	})
	slices.SortFunc(out, func(a, b Job) int { return b.Started.Compare(a.Started) })
	return out, err
}

// Find looks for job id among every agent's jobs.
func Find(root tree.Root, id string) (Job, error) {
	if err := checkID(id); err != nil {
		return Job{}, err
	}
	d, err := safedir.Open(root.States())
	if err != nil {
		return Job{}, fmt.Errorf("find job %s: %w", id, err)
	}
	agents, err := d.ReadDir()
	d.Close()
	if err != nil {
		return Job{}, fmt.Errorf("find job %s: %w", id, err)
	}
	var linked error // the first agent folder refused for a symlink
	for _, a := range agents {
		if t := a.Type(); t != fs.ModeDir && t != fs.ModeSymlink || !tree.ValidName(a.Name()) {
			continue
		}
		j, err := Read(root, a.Name(), id)
		if err == nil {
			return j, nil
		}
		if linked == nil && errors.Is(err, safedir.ErrSymlink) {
			linked = err
		}
	}
	if linked != nil {
		return Job{}, fmt.Errorf("job %s: %w; skipped %w", id, fs.ErrNotExist, linked)
	}
	return Job{}, fmt.Errorf("job %s: %w", id, fs.ErrNotExist)
}

// Kill is the content of a kill file.
type Kill struct {
	By        string             `json:"by"`
	Host      string             `json:"host"`
	Time      string             `json:"time"` // RFC 3339, as written
	Signature *signing.Signature `json:"signature,omitempty"`

	owner int // 1 + the uid that owns the kill file [ReadKill] read; 0: not known
}

// Owner returns the uid that owns the kill file k was read from by
// [ReadKill], or -1 (k was not read from a file, or the owner is not known).
func (k Kill) Owner() int { return k.owner - 1 }

// KindKill is the payload kind of a signed kill request.
const KindKill = "kill"

// Payload returns the bytes the signature of k, the kill request of job id
// of agent, covers (see the package doc).
func (k Kill) Payload(agent, id string) []byte {
	return signing.Payload(KindKill, agent, id, k.By, k.Host, k.Time)
}

// Verify returns the verdict on k, read from the kill file of job id of
// agent, as a request by k.By.
func (k Kill) Verify(v *signing.Verifier, agent, id string) signing.Verdict {
	if k.Signature == nil {
		return signing.Unsigned
	}
	t, err := time.Parse(time.RFC3339Nano, k.Time)
	if err != nil {
		t = time.Now() // no time: a revoked key verifies nothing
	}
	return v.Verify(k.By, t, k.Payload(agent, id), k.Signature)
}

// RequestKill asks the watcher running job id of agent to stop it, as by,
// signed with s (nil: unsigned; else s must be by's key).
func RequestKill(root tree.Root, agent, id, by string, s *signing.Signer) error {
	d, err := openJobs(root, agent, id)
	if err != nil {
		return err
	}
	defer d.Close()
	host, _ := os.Hostname()
	if s != nil && s.Agent() != by {
		return fmt.Errorf("kill %s: the key is %s's, not %s's", id, s.Agent(), by)
	}
	k := Kill{By: by, Host: host, Time: time.Now().UTC().Format(time.RFC3339Nano)}
	k.Signature = s.Sign(k.Payload(agent, id))
	return writeKill(d, id, k)
}

// WriteKill writes k, a kill request already made (and signed, when it
// is) elsewhere, as the kill file of job id of agent: as RequestKill
// writes its own. A kill file already there is kept: asked already.
func WriteKill(root tree.Root, agent, id string, k Kill) error {
	d, err := openJobs(root, agent, id)
	if err != nil {
		return err
	}
	defer d.Close()
	return writeKill(d, id, k)
}

func writeKill(d *safedir.Dir, id string, k Kill) error {
	data, _ := json.Marshal(k)
	err := d.Publish(id+".kill", data, 0o666)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	// Asked already, by the same requester: done. Another's request, which
	// the watcher may refuse (it then removes it), must not pass for this
	// one.
	var there Kill
	if data, _, rerr := d.ReadFile(id+".kill", maxKill); rerr == nil && json.Unmarshal(data, &there) == nil && there.By == k.By {
		return nil
	}
	return fmt.Errorf("kill %s: %w (by %q); the watcher removes one it refuses within a poll: ask again then",
		id, ErrKillPending, there.By)
}

// DismissKill removes the kill request of job id of agent that the
// watcher refused, so that a request it may honour can be made. Only the
// agent's watcher calls it: its account owns the folder, so it may remove
// another account's file there even where the folder is sticky.
func DismissKill(root tree.Root, agent, id string) error {
	d, err := openJobs(root, agent, id)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Remove(id + ".kill"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dismiss kill %s: %w", id, err)
	}
	return nil
}

// KillRequested reports whether someone asked to stop job id of agent.
func KillRequested(root tree.Root, agent, id string) bool {
	if !tree.ValidName(agent) || checkID(id) != nil {
		return false
	}
	// Opening the folder revalidates its attributes on NFS (close-to-open),
	// so a kill file just made on another host is not hidden by a cached
	// "no such file".
	d, err := safedir.Open(root.Jobs(agent))
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = d.Lstat(id + ".kill")
	return err == nil
}

// ReadKill reads the kill request of job id of agent; none is an error that
// wraps fs.ErrNotExist. A kill file that does not decode (a foreign
// writer's) is a request by nobody: Kill{}, which names no sender.
func ReadKill(root tree.Root, agent, id string) (Kill, error) {
	d, err := openJobs(root, agent, id) // revalidates on NFS, as in KillRequested
	if err != nil {
		return Kill{}, err
	}
	defer d.Close()
	data, fi, err := d.ReadFile(id+".kill", maxKill)
	if err != nil {
		return Kill{}, err
	}
	var k Kill
	if json.Unmarshal(data, &k) != nil {
		k = Kill{}
	}
	k.owner = owner(fi) + 1
	return k, nil
}

// maxKill is the largest kill file read.
const maxKill = 64 << 10

// SetStatus changes the status of a finished job of agent (a job that asked
// a question is completed when the answer arrives) and prunes the records
// beyond the last [Keep] finished. Only the agent's watcher calls it.
func SetStatus(root tree.Root, agent, id, status string) error {
	j, err := Read(root, agent, id)
	if err != nil {
		return err
	}
	j.Status = status
	if err := save(root, &j); err != nil {
		return err
	}
	return prune(root, agent, Keep)
}
