package service

import (
	"context"
	"io"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// Workflows is the operations on workflow instances (see the package doc):
// a workflow file's team of agents, each a watcher that the process that
// runs the team starts in itself, in the instance's channel.
type Workflows interface {
	// RunWorkflow runs a team until it is done (no job running, nothing
	// addressed to an agent left unanswered, the channel quiet), the
	// timeout passes (Timeout), ctx ends or a stop file stops it, and
	// returns its result: also with the error of a failed run, a refused
	// last message (Failed) or the timeout. A file without a kickoff is
	// Invalid: a run is done when the conversation its kickoff starts is.
	RunWorkflow(ctx context.Context, req RunRequest) (*RunResult, error)
	// StartWorkflow keeps a team running until ctx ends or it is stopped; with
	// Background, it starts Config.Program detached to do so and returns
	// once every agent is AWAKE. Without a kickoff the team waits for the
	// first message.
	StartWorkflow(ctx context.Context, req StartRequest) (*Started, error)
	// Instances lists what collab ls lists, oldest first: the workflow
	// instances, their status judged, then the delegated sessions not
	// removed.
	Instances(ctx context.Context) ([]Instance, error)
	// StopWorkflow stops one agent of a running instance (NAME@INSTANCE), a whole
	// instance (WORKFLOW@INSTANCE, @INSTANCE: every one of that name) or
	// every running instance, as the account of this process.
	StopWorkflow(ctx context.Context, req StopRequest) ([]StoppedTarget, error)
	// ResumeWorkflows restarts, detached, the instances of this host and
	// account started with start --background whose process is gone.
	ResumeWorkflows(ctx context.Context, req WorkflowResumeRequest) []WorkflowResumed
}

// TeamRequest is what RunWorkflow and StartWorkflow share.
type TeamRequest struct {
	// File is the workflow file.
	File string
	// Instance is the instance's name; "" makes one from the clock
	// (workflow.NewInstance).
	Instance string
	// From posts the kickoff.
	From Actor
	// Env is what the kickoff's ${{ env.NAME }} reads; nil: none is set.
	Env func(string) string
	// Watch are the settings every agent's watcher shares: the door's
	// flags (keyring, NATS, poll, heartbeat, grace, log level); each
	// agent's keys complete them (agentSettings). Poll and Heartbeat are
	// required, as collab watch's.
	Watch watchsetup.Settings
	// WatchHost is what the watchers take from the process: its
	// environment, where their logs' text goes (Stderr; nil: dropped),
	// the second signal.
	WatchHost watchsetup.Host
	// Log takes the setup steps' standard error and the team's notices
	// (a stop file it ignores, the workflow file's warnings: what a CLI
	// cannot restrict of an agent's tools); nil: dropped.
	Log io.Writer
	// Resumed: collab resume restarts the instance, whose kickoff was
	// posted: neither the setup nor the kickoff runs again.
	Resumed bool
}

// RunRequest is a RunWorkflow.
type RunRequest struct {
	TeamRequest
	// Timeout ends the run (Timeout) when the team is not done by then.
	Timeout time.Duration
	// Quiet is how long the channel must be quiet, every agent idle, for
	// the team to be done.
	Quiet time.Duration
	// Seen, if set, is given what the instance's channel ch shows as it
	// happens, from before the kickoff on, and the verifier of the
	// team's watchers (to show who signed); an error ends the run.
	Seen func(ch string, msgs []channel.Message, skips []channel.Skip, v *signing.Verifier) error
}

// RunResult is what a RunWorkflow did.
type RunResult struct {
	Workflow  string           `json:"workflow"`
	Instance  string           `json:"instance"`
	Channel   string           `json:"channel"`
	Status    string           `json:"status"`
	Last      *channel.Message `json:"last_message,omitempty"`
	Documents []string         `json:"documents"`
	Agents    []AgentResult    `json:"agents"`
}

// AgentResult is one agent's part in a run: the jobs it ran since the
// start, their cost and tokens.
type AgentResult struct {
	Name    string  `json:"name"`
	Agent   string  `json:"agent"`
	Jobs    int     `json:"jobs"`
	Failed  int     `json:"failed"`
	CostUSD float64 `json:"cost_usd"`
	Tokens  int64   `json:"tokens"`
}

// StartRequest is a StartWorkflow.
type StartRequest struct {
	TeamRequest
	// Background starts Config.Program detached, with Args, and returns
	// once its record says running; StartTimeout bounds the wait
	// (Timeout).
	Background   bool
	StartTimeout time.Duration
	// Args are the arguments that make Config.Program start this team
	// in the foreground (collab start without --background); the layer
	// adds "--instance NAME" when it chose the name. A detached start
	// records them, with its folder, for collab resume.
	Args []string
	// Detached: this process is such a detached start (it records Args).
	Detached bool
	// Running, if set, is called once the team is running (the kickoff
	// posted, the record says running) in the foreground.
	Running func(Started)
}

// Started is a team that runs.
type Started struct {
	Workflow string `json:"workflow"`
	Instance string `json:"instance"`
	Channel  string `json:"channel"`
	Kickoff  string `json:"kickoff,omitempty"` // the kickoff message's id; "" resumed, or no kickoff
	Resumed  bool   `json:"resumed,omitempty"`
	// PID and Log are a background start's process and log file.
	PID int    `json:"pid,omitempty"`
	Log string `json:"log,omitempty"`
}

// Instance is one row of Instances: a workflow instance's record with its
// status judged, or a delegated session (Name "delegate", Instance its
// id, File its branch, and Delegation the record).
type Instance struct {
	workflow.Record
	Delegation *sessions.Session `json:"delegation,omitempty"`
}

// ID is the instance's name as StopWorkflow takes it: WORKFLOW@INSTANCE.
func (i Instance) ID() string { return i.Name + "@" + i.Instance }

// Stoppable reports whether a stop has something to stop.
func (i Instance) Stoppable() bool {
	return i.Status == workflow.Running || i.Status == workflow.Starting
}

// StopRequest is a StopWorkflow.
type StopRequest struct {
	// Target is NAME@INSTANCE (one agent), WORKFLOW@INSTANCE (the whole
	// instance; a workflow's name wins over an agent's), @INSTANCE (every
	// running instance of that name); ignored with All.
	Target string
	All    bool
	// InstanceOnly refuses (Invalid) a target that is not
	// WORKFLOW@INSTANCE: a stop button of one instance.
	InstanceOnly bool
	// By is who asked, written in the stop file for people.
	By string
	// Wait, when positive, waits that long for the agents to be OFFLINE
	// and the records to say so (then Timeout); 0 only asks.
	Wait time.Duration
}

// StoppedTarget is what Stop asked to stop: a whole instance (Agent "")
// or one agent of it (Agent its id).
type StoppedTarget struct {
	workflow.Record
	Agent string `json:"agent,omitempty"`
}

// ID is what was stopped as people name it: WORKFLOW@INSTANCE, or
// NAME@INSTANCE for one agent.
func (s StoppedTarget) ID() string {
	if s.Agent != "" {
		return workflow.Address(s.Agent)
	}
	return s.Name + "@" + s.Instance
}

// WorkflowResumeRequest is a ResumeWorkflows.
type WorkflowResumeRequest struct {
	// Dry lists what would be restarted.
	Dry bool
	// Timeout bounds the wait for each restarted instance to run.
	Timeout time.Duration
}

// Resume outcomes.
const (
	ResumeRestarted = "restarted"
	ResumeWould     = "would restart"
	ResumeSkipped   = "skipped" // not this account's record
	ResumeFailed    = "failed"
)

// WorkflowResumed is what ResumeWorkflows did with one instance (or the records'
// folder, Name "workflows", when it could not be read).
type WorkflowResumed struct {
	Name    string // WORKFLOW@INSTANCE
	Outcome string // Resume*
	PID     int    // a restarted instance's process
	Err     error  // why it failed (with its kind)
}
