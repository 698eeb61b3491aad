package delivery

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
)

// The tables collab who and collab status print: rows of cells, the first
// the header, each cell one word a terminal shows as it is (Cell).

// WhoTable is rows as collab who shows them: agent, state, age, host,
// channel and the message worked on; the backlog columns when an agent
// reports one, the live column when one reports live processes (see
// LiveCell), the signature column when a row is marked.
func WhoTable(rows []AgentRow, now time.Time) [][]string {
	marks := slices.ContainsFunc(rows, func(r AgentRow) bool { return r.Marked })
	backlogs := slices.ContainsFunc(rows, func(r AgentRow) bool {
		s := r.Status
		return s != nil && (s.Backlog > 0 || s.OldestUnanswered != "" || s.LastReply != "")
	})
	lives := slices.ContainsFunc(rows, func(r AgentRow) bool { return r.Status != nil && r.Status.Live != nil })
	t := [][]string{{"AGENT", "STATE", "AGE", "HOST", "CHANNEL", "MESSAGE"}}
	if backlogs {
		t[0] = append(t[0], "BACKLOG", "OLDEST", "REPLIED")
	}
	if lives {
		t[0] = append(t[0], "LIVE")
	}
	if marks {
		t[0] = append(t[0], "SIGNATURE")
	}
	for _, r := range rows {
		host, channels := r.Where()
		var msg string
		if r.Status != nil && r.State == presence.AwakeWorking {
			msg = r.Status.MessageID
		}
		age := "-"
		if r.HasAge {
			age = FormatAge(r.Age)
		}
		state := r.State
		if r.Status != nil && r.Status.Joined != nil && r.State == presence.AwakeLive {
			state += "(" + Cell(r.Status.Joined.CLI) + ")" // a person's joined session, and its CLI
		}
		row := []string{workflow.Display(r.Agent), state, age, Cell(host), Cell(channels), Cell(msg)}
		if backlogs {
			b, n := r.Backlog(now), "-"
			if b.Backlog != nil {
				n = strconv.Itoa(*b.Backlog)
			}
			row = append(row, n, secondsCell(b.OldestAge), secondsCell(b.RepliedAge))
		}
		if lives {
			row = append(row, r.LiveCell())
		}
		if v := "-"; marks {
			if r.Marked {
				v = r.Verdict.String()
			}
			row = append(row, v)
		}
		t = append(t, row)
	}
	return t
}

// LiveCell is the LIVE cell of an awake agent whose watcher keeps warm
// CLI processes (collab watch --live): open/max and their resident
// memory in MB (10^6 bytes), "3/8,412MB"; "-" otherwise.
func (r AgentRow) LiveCell() string {
	if r.Status == nil || r.Status.Live == nil || !presence.IsAwake(r.State) {
		return "-"
	}
	l := r.Status.Live
	cell := strconv.Itoa(l.Sessions) + "/" + strconv.Itoa(l.Max)
	if l.RSSBytes > 0 {
		cell += "," + strconv.FormatInt((l.RSSBytes+500_000)/1_000_000, 10) + "MB"
	}
	return cell
}

// secondsCell is the cell of an age in seconds, nil when unknown.
func secondsCell(secs *int64) string {
	if secs == nil {
		return "-"
	}
	return FormatAge(time.Duration(*secs) * time.Second)
}

// Header is st's first line as collab status prints it: the message, its
// channel, sender, addressee and time.
func (st Status) Header() string {
	return st.ID + " in " + Cell(st.Channel) + " from " + Cell(workflow.Display(st.From)) + " to " + Cell(workflow.Display(st.To)) + ", " + presence.FormatTime(st.Time)
}

// Table is st's addressees as collab status shows them: agent, delivery
// state and its detail at now.
func (st Status) Table(now time.Time) [][]string {
	t := [][]string{{"AGENT", "STATE", "DETAIL"}}
	for _, a := range st.Addressees {
		t = append(t, []string{tree.Printable(workflow.Display(a.Agent)), a.State, tree.Printable(a.Describe(now))})
	}
	return t
}

// Cell makes a value from a file safe for one table cell: what
// tree.Printable escapes and spaces are shown as \xNN, and an empty value
// is "-".
func Cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(tree.Printable(s), " ", `\x20`)
}
