package delivery

import (
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
)

// TimelineTable is the timelines of st's addressees (filled with
// Options.Timeline) as collab status --timeline prints them: per stage
// the agent, the stage, its time of day (to the
// millisecond, in the time's own zone), the gap from the stage before,
// the time since the first stage, and the via and host. An addressee
// without a timeline (a status through a bridge) has a row saying so.
func (st Status) TimelineTable() [][]string {
	t := [][]string{{"AGENT", "STAGE", "TIME", "GAP", "TOTAL", "VIA", "HOST"}}
	for _, a := range st.Addressees {
		agent := tree.Printable(workflow.Display(a.Agent))
		if a.Timeline == nil || len(a.Timeline.Stages) == 0 {
			t = append(t, []string{agent, "-", "-", "-", "-", "-", "-"})
			continue
		}
		first := a.Timeline.Stages[0].Time
		for i, s := range a.Timeline.Stages {
			gap := "-"
			if i > 0 {
				gap = "+" + Gap(s.Time.Sub(a.Timeline.Stages[i-1].Time))
			}
			t = append(t, []string{agent, Cell(s.Name), s.Time.Format("15:04:05.000"), gap, Gap(s.Time.Sub(first)), Cell(s.Via), Cell(s.Host)})
		}
	}
	return t
}

// Gap is a duration as a timeline shows it: to the millisecond under a
// minute, to the second beyond.
func Gap(d time.Duration) string {
	if d < time.Minute && d > -time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
