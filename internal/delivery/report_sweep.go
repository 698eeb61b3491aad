package delivery

import (
	"errors"
	"io/fs"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// The defaults of a [Sweeper].
const (
	DefaultSweepEvery  = 30 * time.Second // how often watchers and bridges sweep
	DefaultSweepGrace  = time.Minute      // Sweeper.Grace
	DefaultSweepWindow = 24 * time.Hour   // Sweeper.Window
	// maxOpen bounds the messages a sweep keeps open per channel.
	maxOpen = 4096
	// maxRecheck bounds the time between two looks at an open message
	// with nothing due (waiting without expiry, claimed, running).
	maxRecheck = 5 * time.Minute
)

// A Sweeper finds the final bad states nobody reported at once and
// reports them (see "Delivery reports" in the package doc): addressees
// undeliverable for Grace, messages unclaimed past their expiry, and
// refusals and failures whose decider died before reporting them. One
// Sweeper is owned by one goroutine.
//
// It passes over the messages a watcher wrote (mode watcher: replies and
// notices, which answer someone and which nobody owes a claim; a person
// who gets replies has no registry entry, and is not undeliverable for
// that), and those that take no report ([Reportable]).
//
// Its cost per Sweep: one listing of each channel folder
// (channel.Reader: an idle folder costs a stat), each new message read
// once, the channel's settings file, and for each open message that is
// due, each open addressee's report mark and state ([StateFor]: a
// handful of files). A message is due when something may be reported:
// at once when new, at the end of a grace or of its expiry, else after
// a back-off that doubles up to 5 min (waiting without expiry, claimed,
// running). Answered and reported addressees are dropped, and messages
// older than Window.
type Sweeper struct {
	Reporter *Reporter // posts the reports; its Root is the tree swept
	Verifier *signing.Verifier
	Host     string        // this host (presence PIDs are checked here)
	Grace    time.Duration // default DefaultSweepGrace
	Window   time.Duration // default DefaultSweepWindow
	// Logf, if set, is told of each report sent ("delivery report") and
	// each that could not be ("cannot send a delivery report").
	Log func(msg string, m *channel.Message, report string, err error)

	readers map[string]*channel.Reader
	open    map[string][]*openMessage // channel → its open messages, oldest first
}

// openMessage is a recent message with addressees not final yet.
type openMessage struct {
	msg     channel.Message
	agents  []string
	next    time.Time     // when to look again
	backoff time.Duration // the last wait with nothing due
}

func (s *Sweeper) settings() (grace, window time.Duration) {
	grace, window = s.Grace, s.Window
	if grace <= 0 {
		grace = DefaultSweepGrace
	}
	if window <= 0 {
		window = DefaultSweepWindow
	}
	return grace, window
}

// Sweep reads what is new in channels and reports what is due. It
// returns when something will be due next (zero: nothing open), for a
// caller that sweeps then rather than at its next period: an expiry or
// a grace then ends on time. A channel with an expiry of its own
// (ChannelExpireAfter) is due again within a quarter of it, for the
// messages that come meanwhile.
func (s *Sweeper) Sweep(channels []string) (next time.Time) {
	grace, window := s.settings()
	now := s.Reporter.now()
	if s.readers == nil {
		s.readers, s.open = map[string]*channel.Reader{}, map[string][]*openMessage{}
	}
	for _, ch := range channels {
		s.read(ch, now.Add(-window))
		exp := ChannelExpireAfter(s.Reporter.Root, ch)
		if exp > 0 {
			// A message that came since this sweep read the channel is
			// known at the next: a quarter of the expiry from now at most.
			if soon := now.Add(exp / 4); next.IsZero() || soon.Before(next) {
				next = soon
			}
		}
		kept := s.open[ch][:0]
		for _, o := range s.open[ch] {
			if now.Sub(o.msg.Time()) > window {
				continue
			}
			if !now.Before(o.next) {
				s.sweepMessage(o, exp, grace, now)
			}
			if len(o.agents) > 0 {
				kept = append(kept, o)
				if next.IsZero() || o.next.Before(next) {
					next = o.next
				}
			}
		}
		clear(s.open[ch][len(kept):])
		s.open[ch] = kept
	}
	return next
}

// SweepAfter is how long to wait before the next sweep: every, or less
// when next (from Sweep) comes sooner, though not under a tenth of a
// second.
func SweepAfter(every time.Duration, next, now time.Time) time.Duration {
	if next.IsZero() {
		return every
	}
	return min(every, max(next.Sub(now), min(every, 100*time.Millisecond)))
}

// read adds the new messages of ch, from floor on, that may take a
// report.
func (s *Sweeper) read(ch string, floor time.Time) {
	root := s.Reporter.Root
	r := s.readers[ch]
	if r == nil {
		var err error
		if r, err = channel.NewReader(root, ch, channel.Cursor{Floor: floor}, channel.ReaderOptions{Now: s.Reporter.Now}); err != nil {
			return
		}
		s.readers[ch] = r
	}
	msgs, _, err := r.Scan()
	if err != nil || len(msgs) == 0 {
		return
	}
	aliases := workflow.Aliases(root, ch)
	known := func(a string) bool { return registry.KnownTo(root, a, s.Verifier) }
	for i := range msgs {
		m := &msgs[i]
		if !Reportable(m) || m.Metadata.Mode == channel.ModeWatcher || m.Time().Before(floor) || len(s.open[ch]) >= maxOpen {
			continue
		}
		if agents := AddresseesIn(m, known, aliases); len(agents) > 0 {
			s.open[ch] = append(s.open[ch], &openMessage{msg: *m, agents: agents})
		}
	}
}

// sweepMessage reports what is due for o's open addressees, keeps those
// still open and sets when to look again. exp is the channel's expiry
// (0: none).
func (s *Sweeper) sweepMessage(o *openMessage, exp, grace time.Duration, now time.Time) {
	m := &o.msg
	if d, ok := MessageExpireAfter(m); ok {
		exp = d
	}
	o.backoff = min(max(2*o.backoff, grace/4), maxRecheck)
	o.next = now.Add(o.backoff)
	var still []string
	for _, agent := range o.agents {
		due, open := s.sweepAgent(m, agent, exp, grace, now)
		if !open {
			continue
		}
		still = append(still, agent)
		if !due.IsZero() && due.Before(o.next) {
			o.next = due
		}
	}
	o.agents = still
}

// sweepAgent reports m for agent if due; open says agent stays open,
// due when something will be due (zero: nothing known).
func (s *Sweeper) sweepAgent(m *channel.Message, agent string, exp, grace time.Duration, now time.Time) (due time.Time, open bool) {
	root := s.Reporter.Root
	if k, err := ReadReport(root, m.SessionID, agent, m.Key()); err == nil {
		return k.Time.Add(grace), !s.posted(m, k, grace, now)
	}
	a := StateFor(root, m.SessionID, m, agent, Options{Now: s.Reporter.Now, Host: s.Host, Verifier: s.Verifier})
	r := Report{Agent: agent, State: a.State, Guard: a.Guard, Reason: a.Error}
	since := a.Since
	switch {
	case a.State == Answered:
		return time.Time{}, false
	case a.State == Undeliverable:
		r.Reason, since = a.Note, m.Time()
	case (a.State == Waiting || a.State == Seen) && exp > 0:
		r.State, r.Reason = Expired, "nobody claimed it within "+exp.String()
		since = m.Time().Add(exp - grace)
	case !Bad(a.State):
		return time.Time{}, true
	}
	if now.Sub(since) < grace {
		return since.Add(grace), true
	}
	return time.Time{}, !s.send(m, r)
}

// posted reports whether the report its mark k names is in the channel;
// a mark older than grace whose report is not is posted again (its
// decider died between the two), under the same id.
func (s *Sweeper) posted(m *channel.Message, k ReportMark, grace time.Duration, now time.Time) bool {
	if _, err := channel.Lookup(s.Reporter.Root, m.SessionID, k.ID); !errors.Is(err, fs.ErrNotExist) {
		return err == nil
	}
	if now.Sub(k.Time) < grace {
		return false
	}
	return s.send(m, k.Report)
}

// send sends report r on m; it reports whether the report is out.
func (s *Sweeper) send(m *channel.Message, r Report) bool {
	id, err := s.Reporter.Send(m, r)
	if err != nil {
		if s.Log != nil {
			s.Log("cannot send a delivery report", m, "", err)
		}
		return false
	}
	if id != "" && s.Log != nil {
		s.Log("delivery report", m, id, nil)
	}
	return true
}
