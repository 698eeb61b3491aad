package web

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
)

// seqMessages bounds the messages a sequence chart draws: the newest of
// the instance's channel.
const seqMessages = 100

// Geometry of a sequence chart, in SVG user units.
const (
	seqLeft = 90  // the time column
	seqGap  = 230 // between two lifelines
	seqTop  = 64  // the first arrow
	seqRow  = 44  // between two arrows
	seqSelf = 36  // a message to its sender: the loop's width
	seqChar = 7   // the width of a label's character, at most
)

// workflowData is what a workflow instance's page shows.
type workflowData struct {
	Person   string
	Channels []channelItem
	Channel  string // none: the nav marks no channel
	Inst     Instance
	Chart    seqChart
	More     bool // the channel has older messages than the chart
}

// OnAgents tells the nav this is not the agents page.
func (workflowData) OnAgents() bool { return false }

// workflowPage shows a workflow instance (WORKFLOW@INSTANCE) and who
// spoke to whom in its channel over time.
func (s *Server) workflowPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	chans, err := s.pageChannels()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	all, err := s.svc.Instances(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	i := slices.IndexFunc(all, func(in Instance) bool { return in.ID() == id })
	if i < 0 {
		s.fail(w, r, errkind.New(errkind.NotFound, "no workflow instance %q", id))
		return
	}
	d := workflowData{Person: personOf(r), Channels: chans, Inst: all[i]}
	if ch := d.Inst.Channel; ch != "" {
		got, err := s.svc.Read(r.Context(), service.ReadRequest{Channel: ch, Limit: seqMessages})
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errkind.Is(err, errkind.NotFound) {
			s.fail(w, r, err)
			return
		}
		d.More = len(got.Messages) == seqMessages
		d.Chart = s.sequence(r.Context(), ch, d.Inst.Agents, got.Messages)
	}
	s.render(w, http.StatusOK, "workflow-page", d)
}

// seqChart is a sequence chart: a lifeline per agent, left to right in
// the order they first speak or are spoken to (the instance's agents
// that never do, after), and an arrow per message and addressee, time
// downward, one row per message.
type seqChart struct {
	Width, Height int
	Lanes         []seqLane
	Rows          []seqMsg
}

// seqLane is one agent's lifeline at X.
type seqLane struct {
	Agent, Name string
	X           int
	BoxX, BoxW  int
	Bottom      int
}

// seqMsg is one message at height Y: an arrow to each addressee
// (broadcast: a line across every lifeline).
type seqMsg struct {
	ID, URL, From, Text, When, Gap, Kind string
	Label                                string // Text as much as fits
	Y, TextY, GapY                       int
	Arrows                               []seqArrow
	Broadcast                            bool
	X1, X2, BX                           int // broadcast: the line's ends, its label
}

// seqArrow is an arrow from X1 to X2 (Self: a loop at X1, drawn by Path).
type seqArrow struct {
	To     string
	X1, X2 int
	LabelX int
	Label  bool // the first arrow of a message carries its text
	Self   bool
	Path   string
}

// sequence lays out the chart of msgs (oldest first) of channel ch,
// whose instance has agents.
func (s *Server) sequence(ctx context.Context, ch string, agents []string, msgs []channel.Message) seqChart {
	var c seqChart
	pos := map[string]int{}
	lane := func(a string) int {
		if i, ok := pos[a]; ok {
			return i
		}
		pos[a] = len(c.Lanes)
		c.Lanes = append(c.Lanes, seqLane{Agent: a, Name: workflow.Display(a)})
		return pos[a]
	}
	type row struct {
		m  *channel.Message
		to []string
	}
	var rows []row
	for i := range msgs {
		m := &msgs[i]
		var to []string
		for _, a := range s.svc.Delivery(ctx, ch, m).Addressees {
			to = append(to, a.Agent)
		}
		lane(m.From)
		for _, a := range to {
			lane(a)
		}
		rows = append(rows, row{m, to})
	}
	for _, a := range agents {
		lane(a)
	}
	for i := range c.Lanes {
		l := &c.Lanes[i]
		l.X = seqLeft + seqGap/2 + i*seqGap
		l.BoxW = seqGap - 20
		l.BoxX = l.X - l.BoxW/2
	}
	c.Width = seqLeft + max(len(c.Lanes), 1)*seqGap
	c.Height = seqTop + max(len(rows), 1)*seqRow
	for i := range c.Lanes {
		c.Lanes[i].Bottom = c.Height - 8
	}
	var prev time.Time
	for i, r := range rows {
		m := r.m
		y := seqTop + i*seqRow + seqRow/2
		v := seqMsg{ID: m.Key(), URL: MessageURL(ch, m.Key()), From: workflow.Display(m.From), Text: snippet(m.Content.Text),
			When: m.Time().UTC().Format("15:04:05"), Kind: seqKind(m), Y: y, TextY: y - 6, GapY: y + 14}
		if !prev.IsZero() {
			v.Gap = "+" + delivery.Gap(m.Time().Sub(prev).Round(time.Second))
		}
		prev = m.Time()
		from := c.Lanes[pos[m.From]].X
		if len(r.to) == 0 {
			v.Broadcast, v.X1, v.X2 = true, c.Lanes[0].X, c.Lanes[len(c.Lanes)-1].X
			v.BX = v.X1 + 6
		}
		for _, a := range r.to {
			to := c.Lanes[pos[a]].X
			ar := seqArrow{To: workflow.Display(a), X1: from, X2: to, LabelX: min(from, to) + 6, Label: len(v.Arrows) == 0}
			if to == from {
				ar.Self, ar.Path = true, selfLoop(from, y)
			}
			v.Arrows = append(v.Arrows, ar)
		}
		v.Label = clip(v.Text, labelRoom(v, c.Width))
		c.Rows = append(c.Rows, v)
	}
	return c
}

// labelRoom is how many characters of its text a row's label shows: what
// fits over its first arrow (or broadcast line), else up to the chart's
// right edge.
func labelRoom(v seqMsg, width int) int {
	room := width - 12
	switch {
	case v.Broadcast:
		room = v.X2 - v.X1 - 12
	case len(v.Arrows) > 0 && !v.Arrows[0].Self:
		a := v.Arrows[0]
		room = max(a.X1, a.X2) - min(a.X1, a.X2) - 12
	case len(v.Arrows) > 0:
		room = width - v.Arrows[0].LabelX - 6
	}
	return max(room/seqChar, 8)
}

// selfLoop is the path of a message to its sender at x, height y.
func selfLoop(x, y int) string {
	return "M" + itoa(x) + " " + itoa(y-10) + " h" + itoa(seqSelf) + " v20 h-" + itoa(seqSelf)
}

// seqKind is how a message is drawn: a reply, a question, a notice, or a
// request.
func seqKind(m *channel.Message) string {
	switch {
	case delivery.IsNotice(m):
		return "notice"
	case m.IsQuestion():
		return "question"
	case m.Metadata.InReplyTo != "":
		return "reply"
	}
	return "request"
}

// clip is the start of text's first line, at most n runes, "…" when cut.
func clip(text string, n int) string {
	line := []rune(snippet(text))
	if len(line) <= n {
		return string(line)
	}
	return string(line[:n-1]) + "…"
}

// MessageURL is the address of message id's page in channel ch.
func MessageURL(ch, id string) string {
	return "/c/" + url.PathEscape(ch) + "/m/" + url.PathEscape(id)
}

func itoa(n int) string { return strconv.Itoa(n) }
