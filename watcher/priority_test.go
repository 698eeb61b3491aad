package watcher_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

// TestBacklogByPriority: a watcher with a backlog answers its high
// priority messages first (by the sender's priority or by their words),
// then normal, then low, each oldest first, and each exactly once.
func TestBacklogByPriority(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	release := make(chan struct{})
	r := &fakeRunner{reply: blockUntil(release), started: make(chan runCall, 16)}
	h := start(t, config(root, r))

	first := send(t, root, agent, "keep busy")
	<-r.started // the backlog builds up behind it
	// Each message a millisecond after the one before: two in the same
	// millisecond would be ordered by their names' random suffixes.
	base := time.Now().UTC().Truncate(time.Millisecond)
	posted := 0
	as := func(text string, p inbox.Priority) channel.Message {
		posted++
		at := base.Add(time.Duration(posted) * time.Millisecond)
		m := channel.Message{ID: channel.NewID("alice", at, fmt.Sprintf("%04x", posted)), Timestamp: at.Format(channel.TimeFormat),
			To: agent, Content: channel.Content{Text: text}}
		if p != "" {
			inbox.SetPriority(&m, p)
		}
		return post(t, root, m)
	}
	low1 := as("when you have time", inbox.Low)
	n1 := as("please look", "")
	h1 := as("urgent: the build is red", "")
	low2 := as("urgent words, but the sender says low", inbox.Low)
	n2 := as("and this", inbox.Normal)
	h2 := as("now", inbox.High)
	backlog := []channel.Message{low1, n1, h1, low2, n2, h2}
	waitFor(t, "the backlog queued", func() bool {
		for _, m := range backlog {
			if len(h.logs.find("queued", "msg_id", m.ID)) == 0 {
				return false
			}
		}
		return true
	})
	close(release)

	want := ids(first, h1, h2, n1, n2, low1, low2)
	msgs := waitReplies(t, root, want...)
	if got := r.calledIDs(); !slices.Equal(got, want) {
		t.Errorf("answered in the order %v, want %v", got, want)
	}
	for _, id := range want {
		if n, c := len(repliesTo(msgs, id)), len(r.callsFor(id)); n != 1 || c != 1 {
			t.Errorf("%s: %d replies, %d runs; want 1 and 1", id, n, c)
		}
	}
}
