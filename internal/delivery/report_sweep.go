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
)

// A Sweeper finds the final bad states nobody reported at once and
// reports them (see "Delivery reports" in the package doc): addressees
// undeliverable for Grace, messages unclaimed past their expiry, and
// refusals and failures whose decider died before reporting them. One
// Sweeper is owned by one goroutine.
//
// Its cost per Sweep: one listing of each channel folder
// (channel.Reader: an idle folder costs a stat), each new message read
// once, and for each message of the last Window still open for some
// addressee, that addressee's report mark and state ([StateFor]: a
// handful of files). Answered and reported addressees are dropped, and
// messages older than Window; nothing is read twice but those files.
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
	msg    channel.Message
	agents []string
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

// Sweep reads what is new in channels and reports what is due.
func (s *Sweeper) Sweep(channels []string) {
	grace, window := s.settings()
	now := s.Reporter.now()
	if s.readers == nil {
		s.readers, s.open = map[string]*channel.Reader{}, map[string][]*openMessage{}
	}
	for _, ch := range channels {
		s.read(ch, now.Add(-window))
		exp := ChannelExpireAfter(s.Reporter.Root, ch)
		kept := s.open[ch][:0]
		for _, o := range s.open[ch] {
			if now.Sub(o.msg.Time()) > window {
				continue
			}
			if o.agents = s.sweepMessage(o, exp, grace, now); len(o.agents) > 0 {
				kept = append(kept, o)
			}
		}
		clear(s.open[ch][len(kept):])
		s.open[ch] = kept
	}
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
		if !Reportable(m) || m.Time().Before(floor) || len(s.open[ch]) >= maxOpen {
			continue
		}
		if agents := AddresseesIn(m, known, aliases); len(agents) > 0 {
			s.open[ch] = append(s.open[ch], &openMessage{msg: *m, agents: agents})
		}
	}
}

// sweepMessage reports what is due for o's open addressees and returns
// those still open. exp is the channel's expiry (0: none).
func (s *Sweeper) sweepMessage(o *openMessage, exp, grace time.Duration, now time.Time) []string {
	m, root := &o.msg, s.Reporter.Root
	if d, ok := MessageExpireAfter(m); ok {
		exp = d
	}
	opt := Options{Now: s.Reporter.Now, Host: s.Host, Verifier: s.Verifier}
	var still []string
	for _, agent := range o.agents {
		if k, err := ReadReport(root, m.SessionID, agent, m.Key()); err == nil {
			if !s.posted(m, k, grace, now) {
				still = append(still, agent)
			}
			continue
		}
		a := StateFor(root, m.SessionID, m, agent, opt)
		r := Report{Agent: agent, State: a.State, Guard: a.Guard, Reason: a.Error}
		since := a.Since
		switch {
		case a.State == Answered:
			continue
		case a.State == Undeliverable:
			r.Reason, since = a.Note, m.Time()
		case (a.State == Waiting || a.State == Seen) && exp > 0:
			r.State, r.Reason = Expired, "nobody claimed it within "+exp.String()
			since = m.Time().Add(exp - grace)
		case !Bad(a.State):
			still = append(still, agent)
			continue
		}
		if now.Sub(since) < grace || !s.send(m, r) {
			still = append(still, agent)
		}
	}
	return still
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
