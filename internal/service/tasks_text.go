package service

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/task"
)

// The task board's texts, as collab task prints them: one rendering for
// every door that shows a task to a person.

// OneLine shortens text to its first line (" …" marking the rest), with
// control characters shown escaped.
func OneLine(s string) string {
	line, _, cut := strings.Cut(s, "\n")
	if line = tree.Printable(line); cut {
		line += " …"
	}
	return line
}

// Text is s as collab task show prints it: the task, its state, its
// worktree, its body and its events (with their details and verdicts),
// times in loc.
func (s TaskShown) Text(loc *time.Location) string {
	t := s.Task
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s\n", t.ID, OneLine(t.Title))
	fmt.Fprintf(&b, "state:   %s\n", t.State(workflow.Address))
	fmt.Fprintf(&b, "added:   %s by %s\n", t.Created.In(loc).Format(time.DateTime), workflow.Address(t.CreatedBy))
	if len(t.Depends) > 0 {
		fmt.Fprintf(&b, "depends: %s\n", strings.Join(t.Depends, ", "))
	}
	if t.Attempts > 1 {
		fmt.Fprintf(&b, "attempts: %d\n", t.Attempts)
	}
	if t.Worktree != "" {
		fmt.Fprintf(&b, "worktree: %s (branch %s, host %s)\n", OneLine(t.Worktree), OneLine(t.Branch), t.WorktreeHost)
	}
	if t.Body != "" {
		b.WriteString("\n")
		for _, line := range strings.Split(strings.TrimRight(t.Body, "\n"), "\n") {
			parts := strings.Split(line, "\t") // tabs kept, other controls escaped
			for i := range parts {
				parts[i] = tree.Printable(parts[i])
			}
			fmt.Fprintf(&b, "  %s\n", strings.Join(parts, "\t"))
		}
	}
	if len(s.Events) > 0 {
		b.WriteString("\nevents:\n")
	}
	for _, e := range s.Events {
		writeEvent(&b, e, loc)
	}
	return b.String()
}

// writeEvent writes one line of an event: when, what, who, its text,
// files and detail, and a verdict that is not as it should be.
func writeEvent(b *strings.Builder, e task.Event, loc *time.Location) {
	fmt.Fprintf(b, "  %s  %-10s %s", e.Time.In(loc).Format(time.DateTime), e.Event, workflow.Address(e.Agent))
	if e.Host != "" {
		fmt.Fprintf(b, "@%s", tree.Printable(e.Host))
	}
	if e.Type != "" {
		fmt.Fprintf(b, " (%s)", e.Type)
	}
	if s := cmp.Or(e.Summary, e.Outcome, e.Error, e.Note); s != "" {
		fmt.Fprintf(b, ": %s", OneLine(s))
	}
	if len(e.Files) > 0 {
		fmt.Fprintf(b, " [files: %s]", OneLine(strings.Join(e.Files, ", ")))
	}
	if len(e.Detail) > 0 {
		fmt.Fprintf(b, " [detail: %s]", OneLine(e.Detail.String()))
	}
	switch {
	case e.Ignored:
		fmt.Fprintf(b, "  [%s: ignored]", e.Verdict)
	case e.Verdict != signing.Verified && e.Verdict != signing.Unsigned:
		fmt.Fprintf(b, "  [%s]", e.Verdict)
	}
	b.WriteString("\n")
}

// Reported is how collab task confirms an agent's report on task t: a
// checkpoint says what was recorded ("t1: checkpoint (progress)
// recorded"), the rest the task's state ("t1 done", "t1 ready").
func Reported(r TaskReport, t task.Task) string {
	if r.Kind == task.EvCheckpoint {
		return fmt.Sprintf("%s: checkpoint (%s) recorded", t.ID, cmp.Or(r.Checkpoint.Type, task.CkProgress))
	}
	return t.ID + " " + t.State(workflow.Address)
}

// Text is w as collab task worktree prints it, host being this host: the
// worktree and branch (and the host it is on, when another), then gone,
// its uncommitted changes, or clean.
func (w WorktreeState) Text(host string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s  worktree %s (branch %s", w.ID, w.Worktree, w.Branch)
	if w.Host != "" && w.Host != host {
		fmt.Fprintf(&s, ", on host %s", w.Host)
	}
	s.WriteString(")\n")
	switch {
	case w.Host == host && !w.Exists:
		s.WriteString("gone\n")
	case len(w.Dirty) > 0:
		fmt.Fprintf(&s, "uncommitted: %s\n", strings.Join(w.Dirty, ", "))
	case w.Exists:
		s.WriteString("clean\n")
	}
	return s.String()
}

// FateNote says what became of finished task t's worktree (fate, with
// dirty uncommitted changes), rm being the command that removes it; ""
// when there is nothing to say.
func FateNote(fate WorktreeFate, t task.Task, dirty int, rm string) string {
	switch fate {
	case WorktreeElsewhere:
		return fmt.Sprintf("the worktree of %s is on host %s: %s (branch %s); remove it there with: %s", t.ID, t.WorktreeHost, t.Worktree, t.Branch, rm)
	case WorktreeRemoved:
		return fmt.Sprintf("removed worktree %s (branch %s kept)", t.Worktree, t.Branch)
	case WorktreeKept:
		return fmt.Sprintf("worktree %s (branch %s) kept; remove it with: %s", t.Worktree, t.Branch, rm)
	case WorktreeDirty:
		return fmt.Sprintf("worktree %s (branch %s) kept: it has %d uncommitted changes; %s --force removes it anyway", t.Worktree, t.Branch, dirty, rm)
	case WorktreeDeclined:
		return "worktree kept; remove it with: " + rm
	}
	return ""
}

// TasksTable is tasks as collab task list shows them: a header, then one
// row a task (its age at now).
func TasksTable(tasks []task.Task, now time.Time) [][]string {
	rows := [][]string{{"ID", "STATE", "AGE", "TITLE"}}
	for _, t := range tasks {
		state := t.State(workflow.Address)
		if t.Unverified > 0 {
			state += fmt.Sprintf(" [%d unverified]", t.Unverified)
		}
		rows = append(rows, []string{t.ID, state, delivery.FormatAge(now.Sub(t.Updated)), OneLine(t.Title)})
	}
	return rows
}
