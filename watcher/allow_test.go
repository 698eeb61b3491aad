package watcher_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestAllowGrantsDenied: a question with permission rules (Claude Code's
// denials) keeps them while it waits, across a restart of the watcher; an
// answer that allows gives them to the run that resumes the session, and
// to that run only; any other answer is passed on without them.
func TestAllowGrantsDenied(t *testing.T) {
	t.Parallel()
	rules := []string{"Bash(git push)", "Read(//etc/hostname)"}
	for _, tt := range []struct {
		answer string
		want   []string // the resumed run's AllowTools
	}{
		{"allow", rules},
		{"Yes, go ahead.", rules},
		{"ALLOW.", rules},
		{"y", rules},
		{"allow\nthanks", rules},
		{"  \t", nil},
		{"deny", nil},
		{"no", nil},
		{"allowing that would be unwise", nil},
		{"use the staging remote instead", nil},
	} {
		t.Run(tt.answer, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			q := &modelcli.Question{Text: "Claude Code was denied permission for Bash(git push), Read(/etc/hostname).", Options: []string{"allow", "deny"}, Allow: rules}
			r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
				if c.Req.Session == "" {
					return modelcli.Response{Text: "I could not push.", Session: "S1", Question: q}, nil
				}
				return modelcli.Response{Text: "reply to " + c.msgID(), Session: c.Req.Session}, nil
			}}
			cfg := config(root, r)
			h := start(t, cfg)

			m := send(t, root, agent, "push it")
			ask := repliesTo(waitReplies(t, root, m.ID), m.ID)[0]
			for _, want := range []string{`"Bash(git push)", "Read(//etc/hostname)"`, "that run only", "allow, yes or y"} {
				if !strings.Contains(ask.Content.Text, want) {
					t.Errorf("the question %q does not say %q", ask.Content.Text, want)
				}
			}
			var meta struct {
				Allow []string `json:"allow"`
			}
			if err := json.Unmarshal(ask.Metadata.Extra["needs_input"], &meta); err != nil || !slices.Equal(meta.Allow, rules) {
				t.Errorf("metadata.needs_input %s (%v), want allow %q", ask.Metadata.Extra["needs_input"], err, rules)
			}
			waitJob(t, root, m.ID, "awaiting input", func(j jobs.Job) bool { return j.Status == jobs.AwaitingInput && j.Reply != "" })

			// The rules wait in the state file, not in memory alone.
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			start(t, cfg)

			answer := post(t, root, channel.Message{To: agent, Content: channel.Content{Text: tt.answer},
				Metadata: channel.Metadata{InReplyTo: ask.ID, Thread: ask.Metadata.Thread, Hops: ask.Metadata.Hops}})
			waitReplies(t, root, answer.ID)
			calls := r.callsFor(answer.ID)
			if len(calls) != 1 {
				t.Fatalf("%d runs for the answer, want 1", len(calls))
			}
			if got := calls[0].Req; got.Session != "S1" || !slices.Equal(got.AllowTools, tt.want) {
				t.Errorf("the answer's run resumed %q allowing %q; want S1 allowing %q", got.Session, got.AllowTools, tt.want)
			}
			if !strings.Contains(calls[0].Req.Prompt, tt.answer) {
				t.Errorf("the answer's prompt lacks the answer %q", tt.answer)
			}
			aj := waitJob(t, root, answer.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
			granted := slices.ContainsFunc(aj.Events, func(e modelcli.Event) bool {
				return e.Kind == modelcli.EventProgress && strings.HasPrefix(e.Text, "allowed for this run: ")
			})
			if granted != (tt.want != nil) {
				t.Errorf("the answer's job records a grant: %v, want %v (events %+v)", granted, tt.want != nil, aj.Events)
			}

			// The grant lasted one run.
			next := send(t, root, agent, "and now?")
			waitReplies(t, root, next.ID)
			if calls := r.callsFor(next.ID); len(calls) != 1 || calls[0].Req.Session != "S1" || calls[0].Req.AllowTools != nil {
				t.Errorf("the next run: %d calls, %+v; want one resuming S1 allowing nothing", len(calls), calls)
			}
			waitSettled(t, root, agent)
		})
	}
}
