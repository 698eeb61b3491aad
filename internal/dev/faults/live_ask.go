package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// questionTimeout is scenario 20's --question-timeout.
const questionTimeout = 2 * time.Second

// liveQuestionTimeout (scenario 20): one watcher --live with the real
// Claude Code and --question-timeout 2s; for every other message of a
// burst, the model's first call runs a shell command that Claude Code's
// permission mode asks about. Nobody answers: each such question is
// refused after the timeout, the command never runs, the turn carries on
// to the model's answer, and every message is answered once, the
// questions not counted as replies. The messages after a question wait
// for it (one turn at a time) and are answered once too.
func liveQuestionTimeout(ctx context.Context, e *env) error {
	l, err := startLiveModel(e, chanName)
	if err != nil {
		return err
	}
	defer l.close()
	markers := filepath.Join(e.dir, "ran")
	if err := os.MkdirAll(markers, 0o755); err != nil {
		return err
	}
	asking := map[string]bool{} // by text
	n := e.size(6, 4)
	for i := range n {
		if i%2 == 0 {
			asking[fmt.Sprintf("s20 message %d of %d", i+1, n)] = true
		}
	}
	l.shape = func(_ string, m channel.Message, call int, rep fakemodel.Reply) fakemodel.Reply {
		if asking[m.Content.Text] && call == 1 {
			return fakemodel.ShellAsking("touch " + filepath.Join(markers, m.ID))
		}
		return rep
	}
	o := l.watchOpts()
	o.args = append(o.args, "--question-timeout", questionTimeout.String())
	if _, err := e.startWatcher(ctx, o, true); err != nil {
		return err
	}
	for i := range n {
		if _, err := l.send(ctx, chanName, fmt.Sprintf("s20 message %d of %d", i+1, n)); err != nil {
			return err
		}
	}
	if err := l.await(ctx, time.Duration(n)*(questionTimeout+20*time.Second), 2*time.Second); err != nil {
		return err
	}
	questionChecks(e, markers, asking)
	return nil
}

// questionChecks checks scenario 20's questions: one per asking message,
// none for the others, no command run, and each asking job completed
// with the refusal in its events.
func questionChecks(e *env, markers string, asking map[string]bool) {
	s := newScanner(tree.Root(e.backing).Channel(chanName), chanName, agent)
	if err := s.scan(); err != nil {
		e.problem("scan: %v", err)
		return
	}
	refused := 0
	for id, a := range e.acks.snapshot() {
		want := 0
		if asking[a.Text] {
			want = 1
		}
		if got := s.questions[id]; got != want {
			e.problem("%s: %d questions, want %d", id, got, want)
		}
		if _, err := os.Stat(filepath.Join(markers, id)); err == nil {
			e.problem("%s: the command ran without an answer", id)
		}
		if want == 0 {
			continue
		}
		j, err := jobs.ForMessage(tree.Root(e.backing), agent, chanName, id)
		if err != nil || j.Status != jobs.Completed || j.Asked == "" {
			e.problem("%s: job %s (asked %q): %v; want completed, having asked", id, j.Status, j.Asked, err)
			continue
		}
		for _, ev := range j.Events {
			if strings.Contains(ev.Text, "refused: no answer within "+questionTimeout.String()) {
				refused++
				break
			}
		}
	}
	if refused != len(asking) {
		e.problem("%d jobs record the refusal after %s, want %d", refused, questionTimeout, len(asking))
	}
	e.note("%d questions left unanswered, each refused after %s; no command ran", refused, questionTimeout)
}
