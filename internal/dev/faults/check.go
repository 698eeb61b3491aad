package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
)

// ack is a message whose send returned: the ground truth of a run.
type ack struct {
	ID   string
	Text string
	At   time.Time // when the send returned
}

// ledger collects the acks of a run; it is safe for concurrent use.
type ledger struct {
	mu   sync.Mutex
	acks map[string]ack
}

func (l *ledger) add(a ack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.acks == nil {
		l.acks = make(map[string]ack)
	}
	l.acks[a.ID] = a
}

func (l *ledger) snapshot() map[string]ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.acks)
}

// reply is one reply of the agent found in the channel.
type reply struct {
	File   string
	At     time.Time // the reply's JSON time (else its name's)
	Landed time.Time // the file's mtime: when it was written on the mount
	Text   string
}

// answered is when a reply was there: the later of its JSON time and its
// file's mtime (a remote watcher's reply lands on the mount when a bridge
// writes it, after the time it carries).
func (r reply) answered() time.Time {
	if r.Landed.After(r.At) {
		return r.Landed
	}
	return r.At
}

// verdict is the checker's score of one run.
type verdict struct {
	Messages   int           `json:"messages"`
	OK         int           `json:"ok"`
	Lost       int           `json:"lost"`
	Duplicated int           `json:"duplicated"`
	Corrupt    int           `json:"corrupt"`
	MaxLatency time.Duration `json:"max_latency_ns"`
	P50Latency time.Duration `json:"p50_latency_ns"`
	// Last is when the last acked message got its answer (its first
	// reply landed, or for remote senders its file was written): the end
	// of the time to recover.
	Last time.Time `json:"last_answer,omitzero"`
	// answers are, for each message answered, when it was sent (acked)
	// and when it was answered: what recover reads.
	answers []answerAt
	// Others counts the agent's replies to messages that were not acked
	// (notices, replies to foreign files), by the id they answer.
	Others map[string]int `json:"others,omitempty"`
	// Details names the lost, duplicated and corrupt messages (at most a
	// few of each).
	Details []string `json:"details,omitempty"`
}

// answerAt is when one message was sent and when it was answered.
type answerAt struct{ sent, answered time.Time }

// recover is the time to recover from a fault healed at healed: the
// longest any message waited for its answer past the later of the
// healing and its own send (so a burst that goes on after the healing
// does not count its own length); 0 when all were answered before.
func (v verdict) recover(healed time.Time) time.Duration {
	var d time.Duration
	for _, a := range v.answers {
		from := healed
		if a.sent.After(from) {
			from = a.sent
		}
		d = max(d, a.answered.Sub(from))
	}
	return d
}

func (v verdict) failed() bool { return v.Lost > 0 || v.Duplicated > 0 || v.Corrupt > 0 }

// maxReplySize bounds the files the checker reads; replies are small.
const maxReplySize = 2 << 20

// scanner reads the agent's replies in one channel folder. Message files
// are immutable, so each is read once; scan picks up the new ones.
type scanner struct {
	dir, ch, agent string
	files          map[string]bool // names already read
	replies        map[string][]reply
	questions      map[string]int // questions asked mid-run, by the message they are about
	bad            []string
}

func newScanner(dir, ch, agent string) *scanner {
	return &scanner{dir: dir, ch: ch, agent: agent, files: make(map[string]bool), replies: make(map[string][]reply), questions: make(map[string]int)}
}

// scan reads every new file of the folder whose name says it is a message
// from the agent: a reply is filed under the id it answers, a file that is
// not a well-formed message from the agent is corrupt.
func (s *scanner) scan() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if s.files[name] || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		n, err := channel.ParseName(name)
		if err != nil || n.Agent != s.agent {
			continue
		}
		s.files[name] = true
		path := filepath.Join(s.dir, name)
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxReplySize {
			s.bad = append(s.bad, fmt.Sprintf("%s: not a readable regular file of at most %d bytes", name, maxReplySize))
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			s.bad = append(s.bad, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		m, err := channel.Decode(data, name, s.ch)
		if err != nil {
			s.bad = append(s.bad, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if m.From != s.agent {
			s.bad = append(s.bad, fmt.Sprintf("%s: named for %s but from %q", name, s.agent, m.From))
			continue
		}
		if m.Metadata.InReplyTo == "" {
			continue // a notice or a message of its own
		}
		if m.IsQuestion() {
			s.questions[m.Metadata.InReplyTo]++ // asked mid-run: not the reply
			continue
		}
		s.replies[m.Metadata.InReplyTo] = append(s.replies[m.Metadata.InReplyTo], reply{File: name, At: m.Time(), Landed: fi.ModTime(), Text: m.Content.Text})
	}
	return nil
}

// answered counts the acked messages with at least one reply; it is how a
// run waits for quiescence.
func (s *scanner) answered(acks map[string]ack) (int, error) {
	if err := s.scan(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	n := 0
	for id := range acks {
		if len(s.replies[id]) > 0 {
			n++
		}
	}
	return n, nil
}

// check scores a run: for each acked message, the replies of agent in the
// channel folder dir whose metadata.in_reply_to is its id. Exactly one is
// ok, none is lost, more is duplicated; a reply whose text is not the
// stand-in's answer, or a file of the agent that does not parse, is
// corrupt. Latency is the first reply's time minus the ack.
func check(dir, ch, agent string, acks map[string]ack) (verdict, error) {
	s := newScanner(dir, ch, agent)
	if err := s.scan(); err != nil {
		return verdict{}, err
	}
	return score(s.replies, s.bad, acks), nil
}

// score is check's verdict from the replies found (by the id they answer)
// and the agent's files that are not well-formed messages.
func score(replies map[string][]reply, bad []string, acks map[string]ack) verdict {
	v := verdict{Messages: len(acks), Corrupt: len(bad)}
	detail := make(map[string]int)
	note := func(kind, format string, args ...any) {
		if detail[kind]++; detail[kind] <= 5 {
			v.Details = append(v.Details, kind+": "+fmt.Sprintf(format, args...))
		}
	}
	for _, b := range bad {
		note("corrupt", "%s", b)
	}
	var lat []time.Duration
	for _, id := range slices.Sorted(maps.Keys(acks)) {
		a := acks[id]
		rs := replies[id]
		switch len(rs) {
		case 0:
			v.Lost++
			note("lost", "%s (acked %s)", id, a.At.UTC().Format(time.TimeOnly))
			continue
		case 1:
			v.OK++
		default:
			v.Duplicated++
			files := make([]string, len(rs))
			for i, r := range rs {
				files[i] = r.File
			}
			note("duplicated", "%s answered by %s", id, strings.Join(files, ", "))
		}
		first, answered := rs[0].At, rs[0].answered()
		for _, r := range rs {
			if want := expectedReply(id, a.Text); r.Text != want {
				v.Corrupt++
				note("corrupt", "%s: reply %s says %q, want %q", id, r.File, clip(r.Text, 80), want)
			}
			if r.At.Before(first) {
				first = r.At
			}
			if r.answered().Before(answered) {
				answered = r.answered()
			}
		}
		lat = append(lat, max(first.Sub(a.At), 0))
		if answered.After(v.Last) {
			v.Last = answered
		}
		v.answers = append(v.answers, answerAt{a.At, answered})
	}
	for id, rs := range replies {
		if _, ok := acks[id]; !ok {
			if v.Others == nil {
				v.Others = make(map[string]int)
			}
			v.Others[id] = len(rs)
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		v.MaxLatency = lat[len(lat)-1]
		v.P50Latency = lat[len(lat)/2]
	}
	for kind, n := range detail {
		if n > 5 {
			v.Details = append(v.Details, fmt.Sprintf("%s: … and %d more", kind, n-5))
		}
	}
	return v
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
