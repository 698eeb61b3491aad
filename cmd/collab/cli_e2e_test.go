package main

import (
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// The real model CLIs, each run by a collab watcher process against the
// fake model server: a message is answered with the model's words, the next
// one resumes the same session, an API error fails the job with no reply,
// and `collab jobs kill` stops a slow run.
func TestRealCLIs(t *testing.T) {
	for _, tc := range []struct {
		cli  string
		name string
	}{
		{"claude", fakemodel.ClaudeCode},
		{"codex", fakemodel.CodexCLI},
		{"gemini", fakemodel.GeminiCLI},
	} {
		t.Run(tc.cli, func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.Start(t)
			c := srv.CLI(t, tc.name)
			root := newTree(t)
			agent := tc.cli
			startWatcher(t, root, agent, "dev", c.Env,
				"--cli", tc.cli, "--cmd", c.Path, "--model", c.Model, "--workdir", c.Dir, "--timeout", "60s")
			env := map[string]string{"COLLAB_ROOT": root}

			// 1. An answer with the fake model's words.
			srv.Next(fakemodel.Text("the sky is blue"))
			first := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "human", "--channel", "dev", "--to", agent, "what colour is the sky?").stdout)
			reply := waitReply(t, root, agent, first)
			if !strings.Contains(reply.Content.Text, "the sky is blue") {
				t.Errorf("reply = %q; want the model's words", reply.Content.Text)
			}
			// The record is finished just after the reply is posted.
			j1 := waitJob(t, root, agent, first, jobs.Completed)
			if j1.Session == "" || j1.Reply != reply.ID || j1.CLI != tc.cli {
				t.Fatalf("first job: session %q reply %q cli %q", j1.Session, j1.Reply, j1.CLI)
			}

			// 2. The next message resumes the session.
			srv.Next(fakemodel.Text("still blue"))
			second := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "human", "--channel", "dev", "--to", agent, "and at night?").stdout)
			waitReply(t, root, agent, second)
			j2 := waitJob(t, root, agent, second, jobs.Completed)
			if !j2.Resumed || j2.Session != j1.Session {
				t.Errorf("second job resumed=%v session %q; want a resume of %q", j2.Resumed, j2.Session, j1.Session)
			}
			reqs := srv.Requests()
			if last := reqs[len(reqs)-1]; !strings.Contains(last.Transcript(), "the sky is blue") {
				t.Errorf("the resumed call did not carry the first turn:\n%s", last.Transcript())
			}

			// 3. An API error: a failed job and no reply.
			srv.Always(fakemodel.Error(500, "overloaded"))
			third := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "human", "--channel", "dev", "--to", agent, "fail please").stdout)
			waitFor(t, func() bool {
				j, err := jobs.Read(tree.Root(root), agent, jobOf(root, agent, third))
				return err == nil && j.Status == jobs.Failed
			})
			if n := len(replies(t, root, "dev", agent)[third]); n != 0 {
				t.Errorf("%d replies to a failed run", n)
			}

			// 4. A slow run killed from "another host".
			srv.Always(fakemodel.Text("too late").Hung())
			fourth := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "human", "--channel", "dev", "--to", agent, "take forever").stdout)
			waitFor(t, func() bool {
				j, err := jobs.Read(tree.Root(root), agent, jobOf(root, agent, fourth))
				return err == nil && j.Status == jobs.Running
			})
			if r := runCollab(t, env, "", "jobs", "kill", "--agent", "human", jobOf(root, agent, fourth)); r.code != 0 {
				t.Fatalf("jobs kill: exit %d %q", r.code, r.stderr)
			}
			waitFor(t, func() bool {
				j, err := jobs.Read(tree.Root(root), agent, jobOf(root, agent, fourth))
				return err == nil && j.Status == jobs.Killed
			})
			if n := len(replies(t, root, "dev", agent)[fourth]); n != 0 {
				t.Errorf("%d replies to a killed run", n)
			}
		})
	}
}

// waitReply waits (up to a minute: node CLIs start slowly) for agent's one
// reply to message id.
func waitReply(t *testing.T, root, agent, id string) channel.Message {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if r := replies(t, root, "dev", agent)[id]; len(r) > 0 {
			m, err := channel.Lookup(tree.Root(root), "dev", r[0])
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		time.Sleep(50 * time.Millisecond)
	}
	j, _ := jobs.Read(tree.Root(root), agent, jobOf(root, agent, id))
	t.Fatalf("no reply to %s within a minute; job %+v", id, j)
	return channel.Message{}
}

// waitJob waits for agent's job for message id to reach status.
func waitJob(t *testing.T, root, agent, id, status string) jobs.Job {
	t.Helper()
	var j jobs.Job
	waitFor(t, func() bool {
		var err error
		j, err = jobs.Read(tree.Root(root), agent, jobOf(root, agent, id))
		return err == nil && j.Status == status
	})
	return j
}
