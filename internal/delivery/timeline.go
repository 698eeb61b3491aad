package delivery

import (
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/identity/signing"
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

// Span is the time from the first stage to the last (0 with fewer than
// two stages).
func (t Timeline) Span() time.Duration {
	if len(t.Stages) < 2 {
		return 0
	}
	return t.Stages[len(t.Stages)-1].Time.Sub(t.Stages[0].Time)
}

// TimelineFor returns the timeline of m, a message of channel ch, for
// agent, from the files every host sees: the message, the seen file
// (visible and seen), the claim, the job record (run started, first
// output, questions), the reply, the sender's awaited mark (reply seen,
// [MarkAwaited]) and the delivery report. It reads what [StateFor]
// reads, plus those two marks. With opt.Verifier, a seen file or an
// awaited mark that does not verify as its writer's while the writer has
// keys is left out, as [StateFor] leaves it out.
func TimelineFor(root tree.Root, ch string, m *channel.Message, agent string, opt Options) Timeline {
	id := m.Key()
	t := Timeline{Agent: agent, Stages: []Stage{}}
	add := func(s Stage) {
		if !s.Time.IsZero() {
			s.Host, s.Note = tree.Printable(s.Host), tree.Printable(s.Note)
			t.Stages = append(t.Stages, s)
		}
	}
	add(Stage{Name: StageSent, Time: m.Time(), Host: m.Metadata.Host})
	if seen, ok := verifiedSeen(root, ch, agent, id, opt.Verifier); ok {
		add(Stage{Name: StageVisible, Time: seen.Visible, Via: knownVia(seen.Via), Host: seen.Host})
		add(Stage{Name: StageSeen, Time: seen.Time, Host: seen.Host, Note: seen.Guard})
	}
	store := &claim.Store{Root: root, Self: claim.Owner{Agent: agent}}
	var claimed time.Time
	if c, err := store.Read(ch, id); err == nil {
		claimed = c.Claimed
		add(Stage{Name: StageClaimed, Time: c.Claimed, Host: c.Owner.Host})
	}
	if j, ok := findJob(root, agent, ch, id); ok {
		// A job's start is its watcher's dispatch time, taken just
		// before the claim: the run starts once claimed.
		started := j.Started
		if started.Before(claimed) && !j.Started.IsZero() {
			started = claimed
		}
		add(Stage{Name: StageRunStarted, Time: started, Host: j.Host, Note: j.ID})
		add(Stage{Name: StageFirstOutput, Time: firstOutput(j.Events)})
		for _, e := range j.Events {
			if e.Kind == modelcli.EventNeedsInput {
				add(Stage{Name: StageAwaitingInput, Time: e.Time})
			}
		}
	}
	if a := StateFor(root, ch, m, agent, opt); a.State == Answered && a.Reply != "" {
		s := Stage{Name: StageReplied, Time: a.Since, Note: a.Reply}
		if r, err := channel.Lookup(root, ch, a.Reply); err == nil {
			s.Host = r.Metadata.Host
		}
		add(s)
		if w, ok := verifiedAwaited(root, ch, m, a.Reply, opt.Verifier); ok {
			add(Stage{Name: StageReplySeen, Time: w.Time, Via: tree.Printable(w.Agent), Host: w.Host})
		}
	}
	if s, ok := reportedStage(root, ch, agent, id, opt.Verifier); ok {
		s.Name = StageReported
		add(s)
	}
	slices.SortStableFunc(t.Stages, func(a, b Stage) int { return a.Time.Compare(b.Time) })
	return t
}

// reportedStage is the delivery report of message id of ch for agent
// (its once-only mark, [ReadReport]): with v, a mark that does not verify
// as its decider's while the decider has keys is ignored.
func reportedStage(root tree.Root, ch, agent, id string, v *signing.Verifier) (Stage, bool) {
	k, err := ReadReport(root, ch, agent, id)
	if err != nil {
		return Stage{}, false
	}
	if v != nil && k.Verify(v) != signing.Verified && v.HasKeys(k.DecidedBy) {
		return Stage{}, false
	}
	return Stage{Time: k.Time, Via: tree.Printable(k.DecidedBy), Host: k.Host, Note: k.ID}, true
}

// verifiedSeen reads the seen file of message id of ch in agent's folder,
// with ok false when there is none, it names another agent, or (with v)
// it does not verify as agent's while agent has keys.
func verifiedSeen(root tree.Root, ch, agent, id string, v *signing.Verifier) (SeenFile, bool) {
	seen, err := ReadSeen(root, ch, agent, id)
	if err != nil || seen.Agent != agent {
		return SeenFile{}, false
	}
	if v != nil && seen.Verify(v, ch, agent, id) != signing.Verified && v.HasKeys(agent) {
		return SeenFile{}, false
	}
	return seen, true
}

// knownVia is via when it names a known wake source, else "".
func knownVia(via string) string {
	switch via {
	case ViaPoll, ViaFsnotify, ViaNATS:
		return via
	}
	return ""
}

// firstOutput is the time of a run's first output among its events: the
// earliest text of the model's or tool call, else its result. A line the
// CLI or collab prints about the run ("[codex] …", "[gemini] …": an error
// notice) is not output of the model's. Zero without one.
func firstOutput(events []modelcli.Event) time.Time {
	var first, done time.Time
	for _, e := range events {
		switch {
		case e.Kind == modelcli.EventToolCall,
			e.Kind == modelcli.EventProgress && strings.TrimSpace(e.Text) != "" && !cliNotice(e.Text):
			if first.IsZero() || e.Time.Before(first) {
				first = e.Time
			}
		case e.Kind == modelcli.EventCompleted && done.IsZero():
			done = e.Time
		}
	}
	if first.IsZero() {
		return done
	}
	return first
}

// cliNotice reports whether a progress text is a notice of the CLI's
// (its adapter prefixes it "[name] "), not the model's text.
func cliNotice(text string) bool {
	name, ok := strings.CutPrefix(text, "[")
	if !ok {
		return false
	}
	name, _, ok = strings.Cut(name, "] ")
	return ok && name != "" && strings.IndexFunc(name, func(r rune) bool { return r < 'a' || r > 'z' }) < 0
}
