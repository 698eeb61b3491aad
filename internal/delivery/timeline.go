package delivery

import (
	"slices"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Stages of a message's timeline for one addressee, in the order they
// happen. A stage the files do not show is left out.
const (
	StageSent          = "sent"           // the message's time
	StageVisible       = "visible"        // the watcher listed it (Stage.Via: poll, fsnotify, nats)
	StageSeen          = "seen"           // the watcher queued it (the seen file)
	StageClaimed       = "claimed"        // the watcher claimed it
	StageRunStarted    = "run_started"    // its model run started (the job)
	StageFirstOutput   = "first_output"   // the run's first output
	StageAwaitingInput = "awaiting_input" // the run asked a question mid-run
	StageReplied       = "replied"        // the reply is posted
	StageReplySeen     = "reply_seen"     // the sender saw the reply (send --wait)
	StageReported      = "reported"       // a delivery report went to the sender
)

// Stage is one step of a [Timeline].
type Stage struct {
	Name string    `json:"stage"`
	Time time.Time `json:"time"`
	// Via says how the watcher was woken (visible: poll, fsnotify, nats)
	// or who did it (reply_seen: the reader).
	Via  string `json:"via,omitempty"`
	Host string `json:"host,omitempty"`
	Note string `json:"note,omitempty"`
}

// Timeline is what happened to a message for one addressee, stage by
// stage, oldest first.
type Timeline struct {
	Agent  string  `json:"agent"`
	Stages []Stage `json:"stages"`
}

// At returns the time of the named stage, and whether the timeline has it.
func (t Timeline) At(name string) (time.Time, bool) {
	for _, s := range t.Stages {
		if s.Name == name {
			return s.Time, true
		}
	}
	return time.Time{}, false
}

// TimelineFor returns the timeline of m, a message of channel ch, for
// agent, from the files every host sees: the message, the seen file, the
// claim, the job record, the reply. It reads what [StateFor] reads.
func TimelineFor(root tree.Root, ch string, m *channel.Message, agent string, opt Options) Timeline {
	id := m.Key()
	t := Timeline{Agent: agent}
	add := func(s Stage) {
		if !s.Time.IsZero() {
			t.Stages = append(t.Stages, s)
		}
	}
	add(Stage{Name: StageSent, Time: m.Time(), Host: m.Metadata.Host})
	if seen, err := ReadSeen(root, ch, agent, id); err == nil && seen.Agent == agent {
		add(Stage{Name: StageSeen, Time: seen.Time, Host: seen.Host})
	}
	store := &claim.Store{Root: root, Self: claim.Owner{Agent: agent}}
	if c, err := store.Read(ch, id); err == nil {
		add(Stage{Name: StageClaimed, Time: c.Claimed, Host: c.Owner.Host})
	}
	if j, ok := findJob(root, agent, ch, id); ok {
		add(Stage{Name: StageRunStarted, Time: j.Started, Host: j.Host, Note: j.ID})
		for _, e := range j.Events {
			if e.Kind == modelcli.EventProgress || e.Kind == modelcli.EventToolCall {
				add(Stage{Name: StageFirstOutput, Time: e.Time})
				break
			}
		}
		for _, e := range j.Events {
			if e.Kind == modelcli.EventNeedsInput {
				add(Stage{Name: StageAwaitingInput, Time: e.Time})
			}
		}
	}
	if a := state(root, ch, m, agent, opt); a.State == Answered && a.Reply != "" {
		add(Stage{Name: StageReplied, Time: a.Since, Note: a.Reply})
	}
	slices.SortStableFunc(t.Stages, func(a, b Stage) int { return a.Time.Compare(b.Time) })
	return t
}
