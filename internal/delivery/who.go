package delivery

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/registry"
	"github.com/collabdev/collab/presence"
)

// Unknown is the state of a named agent that has neither a heartbeat nor a
// registry entry, or whose heartbeat cannot be read.
const Unknown = "UNKNOWN"

// AgentRow is one agent as `collab who` shows it.
type AgentRow struct {
	Agent  string
	State  string
	Status *presence.Status // nil: no readable heartbeat
	Reg    *registry.Agent  // nil: not registered
	Bad    bool             // its heartbeat file cannot be read
	Age    time.Duration
	HasAge bool

	// Verdict is the heartbeat's (Status), or for a row without one the
	// registry entry's (Reg); Marked: that file does not verify and
	// should (collab who's SIGNATURE).
	Verdict signing.Verdict
	Marked  bool

	RegVerdict signing.Verdict // of Reg, if any
	RegMarked  bool            // the registry entry does not verify and should
}

// VerifyRows sets each row's verdicts, checking the heartbeats in
// parallel. A heartbeat or registry entry is marked when its signature
// fails, or it is unsigned and its agent has keys: one rule for both.
func VerifyRows(v *signing.Verifier, rows []AgentRow) {
	defer verifyRegistry(v, rows)
	var all []presence.Status
	var at []int
	for i, r := range rows {
		if r.Status != nil {
			all = append(all, *r.Status)
			at = append(at, i)
		}
	}
	for k, verdict := range presence.VerifyAll(v, all) {
		r := &rows[at[k]]
		r.Verdict = verdict
		r.Marked = marked(v, r.Agent, verdict)
	}
}

// verifyRegistry sets the rows' registry verdicts; a row without a
// heartbeat takes its entry's as its own.
func verifyRegistry(v *signing.Verifier, rows []AgentRow) {
	for i := range rows {
		r := &rows[i]
		if r.Reg == nil {
			continue
		}
		r.RegVerdict = r.Reg.Verify(v)
		r.RegMarked = marked(v, r.Agent, r.RegVerdict)
		if r.Status == nil {
			r.Verdict, r.Marked = r.RegVerdict, r.RegMarked
		}
	}
}

// marked is whether a file of agent's with verdict is shown marked: it
// does not verify, and it is signed or agent has keys.
func marked(v *signing.Verifier, agent string, verdict signing.Verdict) bool {
	return verdict != signing.Verified && (verdict != signing.Unsigned || v.HasKeys(agent))
}

// Who gathers the agents, all or the named ones, sorted by name: from the
// heartbeats and the registry. Unreadable files are passed to warn (a
// message each) and otherwise skipped. host is this host's name (empty: no
// process is checked).
func Who(root tree.Root, names []string, now time.Time, staleAfter time.Duration, host string, warn func(string)) ([]AgentRow, error) {
	rows := map[string]*AgentRow{}
	row := func(agent string) *AgentRow {
		r := rows[agent]
		if r == nil {
			r = &AgentRow{Agent: agent, State: Unknown}
			rows[agent] = r
		}
		return r
	}
	if len(names) > 0 {
		names = slices.Compact(slices.Sorted(slices.Values(names)))
		for _, n := range names {
			row(n)
			s, err := presence.Read(root, n)
			switch {
			case err == nil:
				row(n).Status = &s
			case !errors.Is(err, fs.ErrNotExist):
				warn(tree.Printable(err.Error()))
				row(n).Bad = true
			}
		}
	} else {
		all, skips, err := presence.ReadAll(root)
		if err != nil {
			return nil, err
		}
		for _, s := range skips {
			warn("skipped presence file " + s.String())
			if a := s.Agent(); a != "" {
				row(a).Bad = true
			}
		}
		for _, s := range all {
			row(s.AgentID).Status = &s
		}
	}

	agents, skips, err := registry.List(root)
	if err != nil {
		warn(tree.Printable(err.Error())) // the registry is optional
	}
	for _, s := range skips {
		if len(names) == 0 || slices.Contains(names, s.Agent()) {
			warn("skipped registry file " + s.String())
		}
	}
	for _, a := range agents {
		if len(names) == 0 || slices.Contains(names, a.ID) {
			row(a.ID).Reg = &a
		}
	}

	out := make([]AgentRow, 0, len(rows))
	for _, r := range rows {
		switch {
		case r.Status != nil:
			r.State = r.Status.Effective(now, staleAfter, host, proc.PIDAlive)
			r.Age, r.HasAge = r.Status.Age(now)
		case r.Reg != nil && !r.Bad:
			r.State = presence.Offline
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b AgentRow) int { return strings.Compare(a.Agent, b.Agent) })
	return out, nil
}

// Where returns the agent's host and channels: from its heartbeat, or for
// an agent without one, the host its registry entry names.
func (r AgentRow) Where() (host, channels string) {
	if s := r.Status; s != nil {
		host, channels = s.Host, s.Channel
		if len(s.Channels) > 0 {
			channels = strings.Join(s.Channels, ",")
		}
	} else if r.Reg != nil {
		host = r.Reg.Host
	}
	return host, channels
}

// WhoEntry is one element of `collab who --json`'s array.
type WhoEntry struct {
	Agent      string `json:"agent"`
	State      string `json:"state"`
	AgeSeconds *int64 `json:"age_seconds"` // null: no heartbeat time
	Host       string `json:"host,omitempty"`
	Channels   string `json:"channels,omitempty"` // comma-separated
	Role       string `json:"role,omitempty"`
	// Verdict is the heartbeat's, or without one the registry entry's;
	// absent with neither.
	Verdict string `json:"verdict,omitempty"`
	// Forged: that file does not verify and should (a failed signature,
	// or unsigned for an agent with keys); not to be trusted.
	Forged bool `json:"forged,omitempty"`
	// RegistryForged: the agent's registry entry (its role, and its host
	// without a heartbeat) does not verify and should.
	RegistryForged bool             `json:"registry_forged,omitempty"`
	Status         *presence.Status `json:"status"` // null: no readable heartbeat
	WhoBacklog
}

// WhoBacklog is what an agent's watcher holds unanswered, and when the
// agent last answered, as its heartbeat says.
type WhoBacklog struct {
	Backlog    *int   `json:"backlog,omitempty"`                   // only while awake
	OldestAge  *int64 `json:"oldest_unanswered_seconds,omitempty"` // only while awake
	RepliedAge *int64 `json:"last_reply_seconds,omitempty"`
}

// Backlog reads r's heartbeat's backlog fields; those of an agent that
// is not awake are unknown (nil), its watcher being gone.
func (r AgentRow) Backlog(now time.Time) WhoBacklog {
	var b WhoBacklog
	s := r.Status
	if s == nil {
		return b
	}
	if n, err := channel.ParseID(s.LastReply); err == nil {
		secs := int64(now.Sub(n.Time) / time.Second)
		b.RepliedAge = &secs
	}
	if !presence.IsAwake(r.State) {
		return b
	}
	n := s.Backlog
	b.Backlog = &n
	if t, ok := OldestUnanswered(*s); ok {
		secs := int64(now.Sub(t) / time.Second)
		b.OldestAge = &secs
	}
	return b
}

// OldestUnanswered parses a heartbeat's oldest_unanswered.
func OldestUnanswered(s presence.Status) (time.Time, bool) {
	if s.Backlog == 0 || s.OldestUnanswered == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s.OldestUnanswered)
	return t, err == nil
}

// WhoEntries returns the rows as `collab who --json` prints them.
func WhoEntries(rows []AgentRow, now time.Time) []WhoEntry {
	out := make([]WhoEntry, len(rows))
	for i, r := range rows {
		out[i] = WhoEntry{Agent: r.Agent, State: r.State, Status: r.Status, WhoBacklog: r.Backlog(now)}
		out[i].Host, out[i].Channels = r.Where()
		if r.HasAge {
			secs := int64(r.Age / time.Second)
			out[i].AgeSeconds = &secs
		}
		if r.Reg != nil {
			out[i].Role = r.Reg.Role
			out[i].RegistryForged = r.RegMarked
		}
		if r.Status != nil || r.Reg != nil {
			out[i].Verdict = r.Verdict.String()
			out[i].Forged = r.Marked
		}
	}
	return out
}

// Stuck is why an awake agent fails a health check (collab who --check
// --max-backlog-age): the oldest message its watcher holds unanswered is
// Oldest old, more than the limit, with Backlog messages held.
type Stuck struct {
	Agent   string
	Oldest  time.Duration
	Backlog int
}

// Check is the health check of an agent, rows being its board: alive
// when a row is awake with a heartbeat younger than staleAfter that
// verifies as it should; stuck (non-nil) when, alive, the oldest message
// its watcher holds unanswered is older than maxBacklogAge (0: no limit).
func Check(rows []AgentRow, staleAfter, maxBacklogAge time.Duration, now time.Time) (alive bool, stuck *Stuck) {
	for _, r := range rows {
		if r.Status == nil || !presence.IsAwake(r.State) || !r.HasAge || r.Age > staleAfter || r.Marked {
			continue
		}
		t, ok := OldestUnanswered(*r.Status)
		if maxBacklogAge <= 0 || !ok || now.Sub(t) <= maxBacklogAge {
			return true, nil
		}
		return true, &Stuck{Agent: r.Agent, Oldest: now.Sub(t), Backlog: r.Status.Backlog}
	}
	return false, nil
}

// FormatAge formats an age in its largest whole unit: 4s, 3m, 2h, 5d
// (collab who's AGE); a negative age keeps its sign.
func FormatAge(d time.Duration) string {
	sign := ""
	if d < -time.Second {
		sign, d = "-", -d
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%s%ds", sign, max(d/time.Second, 0))
	case d < time.Hour:
		return fmt.Sprintf("%s%dm", sign, d/time.Minute)
	case d < 48*time.Hour:
		return fmt.Sprintf("%s%dh", sign, d/time.Hour)
	default:
		return fmt.Sprintf("%s%dd", sign, d/(24*time.Hour))
	}
}
