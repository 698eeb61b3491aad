package presence

import (
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
)

// Kind is the payload kind of a signed heartbeat.
const Kind = "presence"

// Payload returns the bytes a heartbeat's signature covers (see the
// package doc), for the file of agent.
func (s Status) Payload(agent string) []byte {
	counters := "{}"
	if len(s.Counters) > 0 {
		b, _ := json.Marshal(s.Counters) // map keys come out sorted
		counters = string(b)
	}
	fields := []string{
		agent, s.Timestamp, s.State, s.Substate, strconv.Itoa(s.WatcherPID),
		s.Channel, s.Host, strings.Join(s.Channels, ","), s.MessageID,
		s.Started, s.LastReply, strconv.Itoa(s.Queue), counters}
	// The optional groups are appended up to the last one that is set, so
	// heartbeats written before a group existed still verify; an unset
	// group before it is written as its empty values ("0", "").
	groups := [][]string{{strconv.Itoa(s.Backlog), s.OldestUnanswered}, {s.Instance}, (&Live{}).payload(), nil}
	set := []bool{s.Backlog != 0 || s.OldestUnanswered != "", s.Instance != "", s.Live != nil, s.Joined != nil}
	if s.Live != nil {
		groups[2] = s.Live.payload()
	}
	if s.Joined != nil {
		groups[3] = []string{s.Joined.CLI}
	}
	last := -1
	for i, ok := range set {
		if ok {
			last = i
		}
	}
	for _, g := range groups[:last+1] {
		fields = append(fields, g...)
	}
	return signing.Payload(Kind, fields...)
}

// Sign signs s with signer, as its agent's heartbeat; a nil signer
// removes any signature. An empty Timestamp is set to now first.
func (s *Status) Sign(signer *signing.Signer) {
	if signer == nil {
		s.Signature = nil
		return
	}
	if s.Timestamp == "" {
		s.Timestamp = FormatTime(time.Now())
	}
	s.Signature = signer.Sign(s.Payload(s.AgentID))
}

// Verify returns the verdict on s, read from the file of agent: it
// verifies only as that agent's heartbeat, so a signed heartbeat copied to
// another agent's file does not.
func (s Status) Verify(v *signing.Verifier, agent string) signing.Verdict {
	if s.Signature == nil {
		return signing.Unsigned
	}
	if s.AgentID != agent {
		return signing.BadSignature
	}
	t, ok := s.Time()
	if !ok {
		t = time.Now() // no time: a revoked key verifies nothing
	}
	return v.Verify(agent, t, s.Payload(agent), s.Signature)
}

// VerifyAll returns the verdict on each heartbeat of all (each read from
// the file of its agent), checking them in parallel.
func VerifyAll(v *signing.Verifier, all []Status) []signing.Verdict {
	out := make([]signing.Verdict, len(all))
	workers := min(runtime.GOMAXPROCS(0), len(all)/64+1)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(all); i += workers {
				out[i] = all[i].Verify(v, all[i].AgentID)
			}
		})
	}
	wg.Wait()
	return out
}
