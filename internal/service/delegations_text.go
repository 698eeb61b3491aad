package service

import (
	"fmt"
	"strings"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Text is s as collab delegate status prints it: the session, its branch
// and worktree, its git state, its jobs and its last message (cut to 500
// bytes).
func (s SessionStatus) Text() string {
	var b strings.Builder
	ss, p := s.Session, tree.Printable
	fmt.Fprintf(&b, "session %s: agent %s %s (%s), delegated by %s\n", ss.ID, ss.Agent, s.State, ss.Status, ss.DelegatedBy)
	fmt.Fprintf(&b, "branch %s from %s, worktree %s, channel %s\n", p(ss.Branch), p(ss.Base), p(ss.Worktree), ss.Channel)
	switch {
	case s.Git != nil && len(s.Git.Dirty) > 0:
		fmt.Fprintf(&b, "commits ahead of %s: %d\nuncommitted: %s\n", p(ss.Base), s.Git.Ahead, p(strings.Join(s.Git.Dirty, ", ")))
	case s.Git != nil:
		fmt.Fprintf(&b, "commits ahead of %s: %d\nuncommitted: none\n", p(ss.Base), s.Git.Ahead)
	case s.GitError != "":
		fmt.Fprintf(&b, "git: %s\n", p(s.GitError))
	}
	for _, j := range s.Jobs {
		fmt.Fprintf(&b, "job %s %s (message %s)\n", j.ID, j.Status, j.Message)
	}
	if m := s.Last; m != nil {
		text := m.Content.Text
		if len(text) > 500 {
			text = text[:500] + "…"
		}
		fmt.Fprintf(&b, "last message %s from %s:\n%s\n", m.ID, m.From, p(text))
	}
	return b.String()
}
