package task

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultMaxTokens is the budget of a Context when none is given.
const DefaultMaxTokens = 8000

// Context is what an agent needs to resume a task (seed 003's
// task_load_context): the task, its checkpoints and the outcomes of the
// tasks it depends on, cut to a budget of tokens counted as bytes/4 of
// [Context.Text]. See the package doc's Context.
type Context struct {
	Task         ContextTask         `json:"task"`
	Dependencies []DependencyOutcome `json:"dependencies"`
	// Checkpoints are the newest that fit, oldest first; Omitted counts
	// the older ones left out.
	Checkpoints []ContextCheckpoint `json:"checkpoints"`
	Omitted     int                 `json:"omitted_checkpoints,omitempty"`
	Cut         bool                `json:"cut"` // something was left out or shortened
	MaxTokens   int                 `json:"max_tokens"`
	Tokens      int                 `json:"tokens"` // of Text, counted as bytes/4
}

// ContextTask is the task in a Context.
type ContextTask struct {
	ID        string    `json:"id"`
	Channel   string    `json:"channel"`
	Title     string    `json:"title"`
	Body      string    `json:"body,omitempty"`
	BodyCut   bool      `json:"body_cut,omitempty"`
	Status    string    `json:"status"`
	Owner     string    `json:"owner,omitempty"`
	Ready     bool      `json:"ready"`
	Blockers  []string  `json:"blockers,omitempty"`
	BlockedBy []string  `json:"blocked_by,omitempty"` // failed dependencies
	Depends   []string  `json:"depends,omitempty"`
	CreatedBy string    `json:"created_by"`
	Created   time.Time `json:"created"`
	Outcome   string    `json:"outcome,omitempty"`
	Error     string    `json:"error,omitempty"`
	Attempts  int       `json:"attempts,omitempty"`
	LastError string    `json:"last_error,omitempty"` // the failure before the newest retry
	// OutcomeDetail is the done event's structured detail; left out (and
	// DetailCut set) when it does not fit the budget.
	OutcomeDetail Detail `json:"outcome_detail,omitempty"`
	DetailCut     bool   `json:"outcome_detail_cut,omitempty"`
}

// DependencyOutcome is a task the task depends on, and what came of it.
type DependencyOutcome struct {
	ID      string `json:"id"`
	Title   string `json:"title,omitempty"`
	Status  string `json:"status"` // "unknown" when it cannot be read
	Owner   string `json:"owner,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Error   string `json:"error,omitempty"`
	// OutcomeDetail is its done event's structured detail, left out when
	// it does not fit (Cut).
	OutcomeDetail Detail `json:"outcome_detail,omitempty"`
	Cut           bool   `json:"cut,omitempty"`
}

// ContextCheckpoint is one checkpoint in a Context.
type ContextCheckpoint struct {
	Seq   int       `json:"seq"`
	Type  string    `json:"type"` // CkProgress for checkpoints written before types
	Agent string    `json:"agent"`
	Time  time.Time `json:"time"`
	Text  string    `json:"text"`
	Files []string  `json:"files,omitempty"`
	// Detail is the checkpoint's structured detail, left out (DetailCut)
	// when it does not fit.
	Detail    Detail `json:"detail,omitempty"`
	DetailCut bool   `json:"detail_cut,omitempty"`
	Cut       bool   `json:"cut,omitempty"`
}

// Tokens is the rough count of tokens of s: its bytes / 4, rounded up.
func Tokens(s string) int { return (len(s) + 3) / 4 }

// cutMark ends a text that was shortened.
const cutMark = " [… cut]"

// markerRoom is the room kept in the budget for the checkpoints' heading
// and the line that says how many were left out.
const markerRoom = 128

// Context returns the context of task id cut to maxTokens (DefaultMaxTokens
// if not positive). It reads the task's events and its dependencies'
// events, never the rest of the board.
func (b *Board) Context(id string, maxTokens int) (Context, error) {
	if _, err := ParseID(id); err != nil {
		return Context{}, err
	}
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	d, err := b.dir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return Context{}, fmt.Errorf("%w: %s in channel %s", ErrNotFound, id, b.Channel)
	}
	if err != nil {
		return Context{}, err
	}
	defer d.Close()
	t, evs, _, err := b.load(d, id, 0)
	if err != nil {
		return Context{}, err
	}
	deps := make([]DependencyOutcome, 0, len(t.Depends))
	status := map[string]string{}
	for _, dep := range t.Depends {
		dt, _, _, err := b.load(d, dep, 0)
		if err != nil {
			deps = append(deps, DependencyOutcome{ID: dep, Status: "unknown", Error: "cannot be read: " + err.Error()})
			continue
		}
		status[dep] = dt.Status
		deps = append(deps, DependencyOutcome{ID: dep, Title: dt.Title, Status: dt.Status, Owner: dt.Owner,
			Outcome: dt.Outcome, Error: dt.Error, OutcomeDetail: dt.OutcomeDetail})
	}
	readiness(&t, func(dep string) string { return status[dep] })

	budget := maxTokens * 4
	c := Context{MaxTokens: maxTokens, Dependencies: deps, Checkpoints: []ContextCheckpoint{}}
	c.Task = ContextTask{ID: t.ID, Channel: t.Channel, Title: t.Title, Status: t.Status, Owner: t.Owner,
		Ready: t.Ready, Blockers: t.Blockers, BlockedBy: t.BlockedBy, Depends: t.Depends, CreatedBy: t.CreatedBy, Created: t.Created,
		Attempts: t.Attempts}
	c.Task.Body, c.Task.BodyCut = cutText(t.Body, budget/4)
	var cut1, cut2, cut3 bool
	c.Task.Outcome, cut1 = cutText(t.Outcome, budget/8)
	c.Task.Error, cut2 = cutText(t.Error, budget/8)
	c.Task.LastError, cut3 = cutText(t.LastError, budget/16)
	c.Task.OutcomeDetail, c.Task.DetailCut = fitDetail(t.OutcomeDetail, budget/8)
	c.Cut = c.Task.BodyCut || cut1 || cut2 || cut3 || c.Task.DetailCut
	if len(deps) > 0 {
		share := max(budget/4/len(deps), 64)
		for i := range c.Dependencies {
			dp := &c.Dependencies[i]
			dp.Outcome, cut1 = cutText(dp.Outcome, share)
			dp.Error, cut2 = cutText(dp.Error, share)
			dp.OutcomeDetail, cut3 = fitDetail(dp.OutcomeDetail, share)
			dp.Cut = cut1 || cut2 || cut3
			c.Cut = c.Cut || dp.Cut
		}
	}

	cps := checkpoints(evs, budget/8)
	var head strings.Builder
	c.writeHead(&head)
	used := head.Len() + markerRoom
	kept := 0
	for i := len(cps) - 1; i >= 0; i-- {
		var sb strings.Builder
		writeCheckpoint(&sb, cps[i])
		if used+sb.Len() > budget {
			if kept == 0 { // the newest is always there, cut if need be
				cp := &cps[i]
				full, size := cp.Text, sb.Len()
				for n := len(full); used+size > budget && n > 64; {
					n = max(n-(used+size-budget), 64)
					cp.Text, cp.Cut = cutText(full, n)
					var sb strings.Builder
					writeCheckpoint(&sb, *cp)
					size = sb.Len()
				}
				kept = 1
			}
			break
		}
		used += sb.Len()
		kept++
	}
	c.Checkpoints = append(c.Checkpoints, cps[len(cps)-kept:]...)
	c.Omitted = len(cps) - kept
	c.Cut = c.Cut || c.Omitted > 0 || slices.ContainsFunc(c.Checkpoints, func(cp ContextCheckpoint) bool { return cp.Cut || cp.DetailCut })
	c.Tokens = Tokens(c.Text())
	return c, nil
}

// checkpoints are the checkpoints of evs that count (not Ignored), each
// detail left out when longer than detailRoom.
func checkpoints(evs []Event, detailRoom int) []ContextCheckpoint {
	var cps []ContextCheckpoint
	for _, e := range evs {
		if e.Event != EvCheckpoint || e.Ignored {
			continue
		}
		cp := ContextCheckpoint{Seq: e.Seq, Type: cmp.Or(e.Type, CkProgress), Agent: e.Agent, Time: e.Time, Text: e.Summary, Files: e.Files}
		cp.Detail, cp.DetailCut = fitDetail(e.Detail, detailRoom)
		cps = append(cps, cp)
	}
	return cps
}

// cutText returns s shortened to at most n bytes (at a rune boundary,
// cutMark included) and whether it was.
func cutText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	n = max(n-len(cutMark), 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + cutMark, true
}

// fitDetail returns a structured detail when its canonical form fits in
// n bytes, else nil and true: a JSON object is not cut in half.
func fitDetail(d Detail, n int) (Detail, bool) {
	switch {
	case len(d) == 0:
		return nil, false
	case len(d.String()) > n:
		return nil, true
	}
	return d, false
}

// Text returns c as a document to put in a prompt.
func (c Context) Text() string {
	var b strings.Builder
	c.writeHead(&b)
	b.WriteString("\n## Checkpoints (oldest first)\n")
	if c.Omitted > 0 {
		fmt.Fprintf(&b, "[%d older checkpoints left out to fit %d tokens]\n", c.Omitted, c.MaxTokens)
	}
	if len(c.Checkpoints) == 0 && c.Omitted == 0 {
		b.WriteString("none\n")
	}
	for _, cp := range c.Checkpoints {
		writeCheckpoint(&b, cp)
	}
	return b.String()
}

func (c Context) writeHead(b *strings.Builder) {
	t := c.Task
	fmt.Fprintf(b, "# Task %s: %s\n\n", t.ID, t.Title)
	fmt.Fprintf(b, "channel: %s\n", t.Channel)
	fmt.Fprintf(b, "state: %s\n", stateText(t.Status, t.Owner, t.Blockers, t.BlockedBy, nil))
	if t.Attempts > 1 {
		fmt.Fprintf(b, "attempts: %d\n", t.Attempts)
	}
	fmt.Fprintf(b, "added: %s by %s\n", t.Created.UTC().Format(time.RFC3339), t.CreatedBy)
	if len(t.Depends) > 0 {
		fmt.Fprintf(b, "depends on: %s\n", strings.Join(t.Depends, ", "))
	}
	if t.Body != "" {
		fmt.Fprintf(b, "\n## What to do\n%s\n", t.Body)
	}
	if t.Outcome != "" {
		fmt.Fprintf(b, "\n## Outcome\n%s\n", t.Outcome)
	}
	writeDetail(b, "", t.OutcomeDetail, t.DetailCut)
	if t.Error != "" {
		fmt.Fprintf(b, "\n## Error\n%s\n", t.Error)
	}
	if t.LastError != "" {
		fmt.Fprintf(b, "\n## The previous attempt failed\n%s\n", t.LastError)
	}
	if len(c.Dependencies) > 0 {
		b.WriteString("\n## Dependencies\n")
	}
	for _, d := range c.Dependencies {
		fmt.Fprintf(b, "- %s (%s)", d.ID, d.Status)
		if d.Title != "" {
			fmt.Fprintf(b, ": %s", d.Title)
		}
		b.WriteString("\n")
		if d.Outcome != "" {
			fmt.Fprintf(b, "  outcome: %s\n", d.Outcome)
		}
		if d.Error != "" {
			fmt.Fprintf(b, "  error: %s\n", d.Error)
		}
		writeDetail(b, "  ", d.OutcomeDetail, false)
	}
}

// writeDetail writes a structured detail's line, or says it was left
// out.
func writeDetail(b *strings.Builder, indent string, d Detail, cut bool) {
	switch {
	case len(d) > 0:
		fmt.Fprintf(b, "%sdetail: %s\n", indent, d)
	case cut:
		fmt.Fprintf(b, "%sdetail: [left out to fit]\n", indent)
	}
}

func writeCheckpoint(b *strings.Builder, cp ContextCheckpoint) {
	fmt.Fprintf(b, "- #%d %s %s by %s\n", cp.Seq, cp.Time.UTC().Format(time.RFC3339), cp.Type, cp.Agent)
	fmt.Fprintf(b, "  %s\n", strings.ReplaceAll(cp.Text, "\n", "\n  "))
	if len(cp.Files) > 0 {
		fmt.Fprintf(b, "  files: %s\n", strings.Join(cp.Files, ", "))
	}
	writeDetail(b, "  ", cp.Detail, cp.DetailCut)
}
