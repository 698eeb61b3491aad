package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// TestConfinedTree replaces each folder of the tree by a symbolic link to
// a folder outside ROOT (holding what the folder held) and runs every
// command that uses it: each fails with an error naming the link, or goes
// on without it, and nothing outside ROOT is written, nor read back (no
// text that only the moved folder holds is printed).
func TestConfinedTree(t *testing.T) {
	folders := []string{
		"channels", "channels/dev",
		"signals", "signals/presence",
		"state", "state/outsider", "state/outsider/jobs",
		"claims", "claims/dev",
		"docs", "docs/dev",
		"tasks", "tasks/dev",
		"logs",
		"registry", "registry/agents",
	}
	// Texts each stored in one folder only.
	secrets := []string{"secret-channel", "secret-doc", "secret-task", "secret-presence", "secret-registry", "secret-job", "secret-log"}
	for _, folder := range folders {
		t.Run(folder, func(t *testing.T) {
			root := newTree(t)
			env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev", "COLLAB_AGENT": "alice"}
			jobID := populate(t, tree.Root(root), env)
			link := filepath.Join(root, folder)
			outside := filepath.Join(t.TempDir(), "moved")
			if err := os.Rename(link, outside); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, outside)
			var hidden []string // the secrets only the moved folder holds
			for _, s := range secrets {
				for _, data := range before {
					if strings.Contains(data, s) {
						hidden = append(hidden, s)
						break
					}
				}
			}
			check := func(what, stdout, stderr string, err error) {
				t.Helper()
				for _, s := range hidden {
					if strings.Contains(stdout+stderr, s) {
						t.Errorf("%s printed %q, read through the link %s", what, s, link)
					}
				}
				if err != nil && (!strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link")) {
					t.Errorf("%s: error %q does not name the link %s", what, err, link)
				}
			}
			for _, args := range [][]string{
				{"send", "--agent", "alice", "--channel", "dev", "hello"},
				{"send", "--agent", "alice", "--channel", "dev", "--to", "outsider", "hi"},
				{"read", "--channel", "dev"},
				{"who"},
				{"who", "--json"},
				{"doc", "write", "--channel", "dev", "--text", "new"},
				{"doc", "append", "--channel", "dev", "--text", "more"},
				{"doc", "read", "--channel", "dev"},
				{"doc", "list", "--channel", "dev"},
				{"task", "add", "--agent", "lead", "--title", "new"},
				{"task", "list"},
				{"inbox", "--agent", "outsider"},
				{"inbox", "--agent", "alice", "--peek"},
				{"jobs"},
				{"jobs", "show", jobID},
				{"init"},
			} {
				r := runCollab(t, env, "", args...)
				var err error
				if r.code != 0 {
					err = errorString(r.stderr)
				}
				t.Logf("%v: exit %d: %s", args, r.code, strings.TrimSpace(r.stderr))
				check(strings.Join(args, " "), r.stdout, r.stderr, err)
			}
			// No command of the CLI but watch uses these two; run what it runs.
			log, done, err := watchsetup.Logger(tree.Root(root), "outsider", slog.LevelInfo, io.Discard)
			if err == nil {
				log.Info("started")
				done()
			}
			check("watch log", "", "", err)
			store := &claim.Store{Root: tree.Root(root), Self: claim.Self("outsider")}
			_, _, err = store.Acquire("dev", "msg-20260101-000100-bob-0002")
			check("claim", "", "", err)

			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link %s was replaced", link)
			}
			after := snapshot(t, outside)
			for p, data := range after {
				if was, ok := before[p]; !ok || was != data {
					t.Errorf("written outside ROOT: %s", filepath.Join(outside, p))
				}
			}
			for p := range before {
				if _, ok := after[p]; !ok {
					t.Errorf("removed outside ROOT: %s", filepath.Join(outside, p))
				}
			}
		})
	}
}

// populate fills a tree the ordinary way, each secret in one folder, and
// returns the id of a job of agent "outsider".
func populate(t *testing.T, root tree.Root, env map[string]string) string {
	t.Helper()
	for _, args := range [][]string{
		{"init"},
		{"send", "--agent", "bob", "--channel", "dev", "--to", "outsider", "secret-channel"},
		{"doc", "write", "--channel", "dev", "--text", "secret-doc"},
		{"task", "add", "--agent", "lead", "--title", "secret-task"},
	} {
		if r := runCollab(t, env, "", args...); r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	err := presence.Write(root, presence.Status{AgentID: "outsider", State: presence.StateAwake, Substate: "IDLE",
		Channel: "dev", Host: "secret-presence", Timestamp: presence.FormatTime(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]string{"id": "outsider", "role": "secret-registry", "host": "secret-registry"})
	if err := os.WriteFile(filepath.Join(root.Registry(), "outsider.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	msg := "msg-20260101-000000-bob-0001"
	rec, err := jobs.Start(root, jobs.Job{ID: "job-" + msg, Agent: "outsider", Host: "h", Channel: "dev",
		Message: msg, From: "bob", CLI: "secret-job"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root.Logs(), "outsider.log"), []byte("secret-log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := &claim.Store{Root: root, Self: claim.Self("outsider")}
	if _, _, err := store.Acquire("dev", msg); err != nil {
		t.Fatal(err)
	}
	return "job-" + msg
}

// snapshot returns every file and folder under dir with its content ("/"
// for a folder, "-> target" for a link).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range filesUnder(t, dir) {
		full := filepath.Join(dir, p)
		fi, err := os.Lstat(full)
		switch {
		case err != nil:
			t.Fatal(err)
		case fi.IsDir():
			out[p] = "/"
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(full)
			out[p] = "-> " + target
		default:
			data, err := os.ReadFile(full)
			if err != nil {
				t.Fatal(err)
			}
			out[p] = string(data)
		}
	}
	return out
}

type errorString string

func (e errorString) Error() string { return string(e) }
