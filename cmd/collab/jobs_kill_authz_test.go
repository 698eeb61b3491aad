package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/accounts"
)

// TestJobsKillAcrossAccounts: who may kill whose job (jobs.MayKill), as
// separate accounts of a tree made with init --group. codex's watcher runs
// as its own account with a slow CLI, answering alice, who has a key. A
// group member (the Mallory account, which here also holds alice's key:
// what counts is the name a request gives and the key that signs it) is
// refused by 'collab jobs kill' (exit 4, no kill file) as "mallory", and
// as alice without her key; kill files it writes directly, as mallory or
// unsigned in alice's or codex's name, are refused by the watcher (logged
// and removed) and the job runs on. Then alice kills it with her key, codex
// kills its next job, and the admin, by any name, the one after.
func TestJobsKillAcrossAccounts(t *testing.T) {
	t.Parallel()
	g := newGroupTree(t)
	s := g.s
	root := tree.Root(g.root)
	g.run(t, s.Admin, "key", "trust", "codex", g.key(t, s.Agent, "codex", ""))
	aliceKey := filepath.Join(s.Mallory.Home, "alice.key")
	g.run(t, s.Admin, "key", "trust", "alice", g.key(t, s.Mallory, "alice", aliceKey))
	slow := *g
	slow.env = append(slices.Clone(g.env), "FAKE_CLI_SLEEP=1h")
	w := slow.watch(t, s.Agent, "codex")

	// running sends a message from alice to codex and waits for codex's
	// job that answers it to run.
	running := func() jobs.Job {
		t.Helper()
		id := strings.TrimSpace(g.run(t, s.Mallory, "send", "--agent", "alice", "--key", aliceKey, "--channel", "dev", "--to", "codex", "take your time"))
		var j jobs.Job
		waitFor(t, func() bool {
			var err error
			j, err = jobs.ForMessage(root, "codex", "dev", id)
			return err == nil && j.Status == jobs.Running
		})
		return j
	}
	killed := func(j jobs.Job) {
		t.Helper()
		waitFor(t, func() bool {
			got, err := jobs.Read(root, "codex", j.ID)
			return err == nil && got.Status == jobs.Killed
		})
	}

	j := running()
	if j.From != "alice" {
		t.Fatalf("job from %q, want alice", j.From)
	}
	noKey := []string{"XDG_CONFIG_HOME=" + filepath.Join(s.Mallory.Home, "nothing")}
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		want string // in stderr
	}{
		{"a stranger", nil, []string{"--agent", "mallory"}, `"mallory" may not kill codex's job`},
		{"the asker without her key", noKey, []string{"--agent", "alice"}, `does not verify as theirs (unsigned)`},
	} {
		_, errOut, err := s.Mallory.Try(append(slices.Clone(g.env), tt.env...), g.exe, append([]string{"jobs", "kill", j.ID}, tt.args...)...)
		if code := accounts.ExitCode(err); code != 4 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: jobs kill exit %d, stderr %q; want 4 and %q", tt.name, code, errOut, tt.want)
		}
		if jobs.KillRequested(root, "codex", j.ID) {
			t.Fatalf("%s: a kill file was written", tt.name)
		}
	}

	// Kill files written directly, as the group member.
	for _, by := range []string{"mallory", "alice", "codex"} {
		src := filepath.Join(s.Dir, "kill-"+by)
		body := `{"by": "` + by + `", "host": "elsewhere", "time": "` + time.Now().UTC().Format(time.RFC3339Nano) + `"}`
		if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(root.Jobs("codex"), ".kill-"+by)
		s.Mallory.Run(t, nil, "cp", src, tmp)
		s.Mallory.Run(t, nil, "mv", tmp, filepath.Join(root.Jobs("codex"), j.ID+".kill"))
		// Refused and removed, or (as before the rule) obeyed.
		waitFor(t, func() bool {
			got, err := jobs.Read(root, "codex", j.ID)
			return !jobs.KillRequested(root, "codex", j.ID) || err == nil && got.Done()
		})
		if got, err := jobs.Read(root, "codex", j.ID); err != nil || got.Status != jobs.Running {
			t.Fatalf("after %s's kill file: job %s (%v), want running", by, got.Status, err)
		}
		// The watcher removes a refused file, then logs it.
		waitFor(t, func() bool { return refusedIn(w.stderr.String(), j.ID, by) })
	}

	// The asker, with her key.
	g.run(t, s.Mallory, "jobs", "kill", j.ID, "--agent", "alice", "--key", aliceKey)
	killed(j)

	// The job's own agent.
	j = running()
	g.run(t, s.Agent, "jobs", "kill", j.ID, "--agent", "codex")
	killed(j)

	// The tree's admin, by a name that is neither.
	j = running()
	g.run(t, s.Admin, "jobs", "kill", j.ID, "--agent", "ops")
	killed(j)
}

// refusedIn reports whether log has a line that refuses a kill request of
// job by by.
func refusedIn(log, job, by string) bool {
	for line := range strings.Lines(log) {
		if strings.Contains(line, "kill request refused") && strings.Contains(line, job) && strings.Contains(line, "from="+by+" ") {
			return true
		}
	}
	return false
}
