package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
)

// The timeline pages: a message's page (its status per addressee and
// each addressee's timeline as a horizontal bar) and a workflow
// instance's (who spoke to whom over time, a sequence chart:
// page_workflow.go). Both draw SVG on the server with html/template, so
// every name and text is escaped and no script is needed; the SVG's
// geometry is attributes (the CSP allows no inline style), its colours
// page.css's.

// routeTimelinePages adds the timeline pages' routes to mux.
func (s *Server) routeTimelinePages(mux *http.ServeMux) {
	mux.HandleFunc("GET /c/{channel}/m/{id}", s.messagePage)
	mux.HandleFunc("GET /workflows/{id}", s.workflowPage)
}

// messageData is what the message page shows.
type messageData struct {
	Person   string
	Channels []channelItem
	Channel  string
	Status   delivery.Status
	When     string
	Bars     []timelineBar
}

// OnAgents tells the nav this is not the agents page.
func (messageData) OnAgents() bool { return false }

// messagePage shows where message id of a channel stands for each
// addressee, and each one's timeline.
func (s *Server) messagePage(w http.ResponseWriter, r *http.Request) {
	ch, id := r.PathValue("channel"), r.PathValue("id")
	if err := tree.CheckName("channel", ch); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if _, err := channel.ParseID(id); err != nil {
		http.Error(w, "not a message id", http.StatusBadRequest)
		return
	}
	chans, err := s.pageChannels()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := s.svc.Status(r.Context(), service.StatusRequest{Channel: ch, ID: id, Timeline: true})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := time.Now()
	d := messageData{Person: personOf(r), Channels: chans, Channel: ch, Status: st, When: st.Time.UTC().Format("2006-01-02 15:04:05")}
	for _, a := range st.Addressees {
		d.Bars = append(d.Bars, newTimelineBar(a, now))
	}
	s.render(w, http.StatusOK, "message-page", d)
}

// Geometry of a timeline bar, in SVG user units (the SVG scales to the
// page's width).
const (
	barWidth  = 960
	barHeight = 34
	barMinSeg = 36 // the least width of a segment, so a short stage shows
	barChar   = 8  // the width of a label's character, at most
)

// timelineBar is one addressee's timeline as the message page draws it: a
// segment per step from one stage to the next, each at least barMinSeg
// wide, the rest of the width shared in proportion to time, and the
// stages as a table (the accessible text).
type timelineBar struct {
	Agent, State, Detail string
	Span                 string // first stage to last
	Width, Height        int
	Segs                 []barSeg
	Stages               []stageRow
}

// barSeg is the step to stage Name: from X, W wide.
type barSeg struct {
	Name    string
	X, W, H int
	TextX   int
	Label   string // shown when the segment is wide enough
	Title   string // the tooltip: from, to, how long
}

// stageRow is one stage as the table under a bar lists it.
type stageRow struct {
	Name, Time, Gap, Total, Via, Host, Note string
}

func newTimelineBar(a delivery.Addressee, now time.Time) timelineBar {
	b := timelineBar{Agent: workflow.Display(a.Agent), State: a.State, Detail: a.Describe(now), Width: barWidth, Height: barHeight}
	if a.Timeline == nil || len(a.Timeline.Stages) == 0 {
		return b
	}
	stages := a.Timeline.Stages
	first := stages[0].Time
	b.Span = delivery.Gap(a.Timeline.Span())
	for i, st := range stages {
		row := stageRow{Name: st.Name, Time: st.Time.UTC().Format("15:04:05.000"), Gap: "", Total: delivery.Gap(st.Time.Sub(first)),
			Via: st.Via, Host: st.Host, Note: st.Note}
		if i > 0 {
			row.Gap = "+" + delivery.Gap(st.Time.Sub(stages[i-1].Time))
		}
		b.Stages = append(b.Stages, row)
	}
	xs := segmentWidths(stages, barWidth)
	x := 0
	for i := 1; i < len(stages); i++ {
		w := xs[i-1]
		gap := delivery.Gap(stages[i].Time.Sub(stages[i-1].Time))
		seg := barSeg{Name: stages[i].Name, X: x, W: w, H: barHeight, TextX: x + 4,
			Title: stages[i-1].Name + " → " + stages[i].Name + ": " + gap}
		switch label := stages[i].Name + " " + gap; {
		case fits(label, w):
			seg.Label = label
		case fits(gap, w):
			seg.Label = gap
		}
		b.Segs = append(b.Segs, seg)
		x += w
	}
	return b
}

// fits reports whether label fits in a segment w wide.
func fits(label string, w int) bool { return len(label)*barChar+8 <= w }

// segmentWidths shares width among the steps between stages: each step
// barMinSeg (less when there are many), the rest in proportion to its
// time. The widths add up to width.
func segmentWidths(stages []delivery.Stage, width int) []int {
	n := len(stages) - 1
	if n <= 0 {
		return nil
	}
	least := min(barMinSeg, width/(2*n))
	spare := width - least*n
	total := stages[n].Time.Sub(stages[0].Time)
	out := make([]int, n)
	used := 0
	for i := range n {
		d := stages[i+1].Time.Sub(stages[i].Time)
		share := spare / n // no time at all: equal shares
		if total > 0 {
			share = int(float64(spare) * float64(max(d, 0)) / float64(total))
		}
		out[i] = least + share
		used += out[i]
	}
	out[n-1] += width - used // rounding
	return out
}

// Describe is the bar's summary for its SVG's accessible name.
func (b timelineBar) Describe() string {
	if len(b.Stages) == 0 {
		return b.Agent + ": no timeline"
	}
	return b.Agent + ": " + strconv.Itoa(len(b.Stages)) + " stages from " + b.Stages[0].Name + " to " +
		b.Stages[len(b.Stages)-1].Name + " in " + b.Span
}
