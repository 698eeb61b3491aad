package jobs_test

import (
	"errors"
	"os"
	"testing"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/keytest"
)

// TestMayKill: the job's agent, its asker and the tree's admin may kill
// it; no one else, and no one whose request is not authentic as them.
func TestMayKill(t *testing.T) {
	t.Parallel()
	j := jobs.Job{ID: "job-1", Agent: "codex", From: "alice"}
	for _, tt := range []struct {
		name string
		job  jobs.Job
		r    jobs.Requester
		ok   bool
	}{
		{"the job's agent", j, jobs.Requester{Name: "codex", Authentic: true}, true},
		{"its asker", j, jobs.Requester{Name: "alice", Verdict: signing.Verified, Authentic: true}, true},
		{"its keyless asker, taken at its word", j, jobs.Requester{Name: "alice", Verdict: signing.Unsigned, Authentic: true}, true},
		{"the admin, by any name", j, jobs.Requester{Name: "someone", Admin: true}, true},
		{"the admin, naming no one", j, jobs.Requester{Admin: true}, true},
		{"a keyless stranger", j, jobs.Requester{Name: "mallory", Verdict: signing.Unsigned, Authentic: true}, false},
		{"a verified stranger", j, jobs.Requester{Name: "bob", Verdict: signing.Verified, Authentic: true}, false},
		{"a forged asker", j, jobs.Requester{Name: "alice", Verdict: signing.Unsigned}, false},
		{"a forged agent", j, jobs.Requester{Name: "codex", Verdict: signing.UnknownKey}, false},
		{"no one", j, jobs.Requester{Authentic: true}, false},
		{"a case variant of the asker", j, jobs.Requester{Name: "Alice", Authentic: true}, false},
		{"anyone, of a job that names no asker", jobs.Job{ID: "job-2", Agent: "codex"}, jobs.Requester{Name: "", Authentic: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := jobs.MayKill(tt.job, tt.r)
			if got := err == nil; got != tt.ok {
				t.Fatalf("MayKill(%+v, %+v) = %v, want allowed %v", tt.job, tt.r, err, tt.ok)
			}
			if err != nil && !errors.Is(err, jobs.ErrNotAllowed) {
				t.Errorf("error %v does not wrap ErrNotAllowed", err)
			}
		})
	}
}

// TestKillRequester: a kill file read from the tree gives its requester:
// the name and verdict, whether the policy takes it as authentic, and
// whether its owner is the tree's admin (root or the root folder's owner,
// but never the account that runs the job).
func TestKillRequester(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	j := newJob("msg-20260310-120000-alice-0011")
	mustStart(t, root, j, nil)
	ring := keytest.Ring(t)
	keytest.Trusted(t, ring, "alice")
	v := signing.NewVerifier(ring)
	me, rootOwner := os.Geteuid(), keyring.Owner(string(root))
	if got := jobs.Runner(root, agent, j.ID); got != me {
		t.Errorf("Runner = %d, want this account, %d", got, me)
	}
	if got := jobs.Runner(root, agent, "job-none"); got != -1 {
		t.Errorf("Runner of no record = %d, want -1", got)
	}

	if err := jobs.RequestKill(root, agent, j.ID, "alice", nil); err != nil {
		t.Fatal(err)
	}
	k, err := jobs.ReadKill(root, agent, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if k.Owner() != me {
		t.Errorf("Owner = %d, want %d", k.Owner(), me)
	}
	if (jobs.Kill{}).Owner() != -1 {
		t.Error("a Kill not read from a file has an owner")
	}
	for _, tt := range []struct {
		name   string
		p      signing.Policy
		runner int
		want   jobs.Requester
	}{
		{"known, run by this account", signing.Known, me, jobs.Requester{Name: "alice", Verdict: signing.Unsigned}},
		{"any, run by this account", signing.Any, me, jobs.Requester{Name: "alice", Verdict: signing.Unsigned, Authentic: true}},
		{"known, run by another account", signing.Known, me + 1, jobs.Requester{Name: "alice", Verdict: signing.Unsigned,
			Admin: me == 0 || me == rootOwner}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := k.Requester(root, v, tt.p, agent, j.ID, tt.runner); got != tt.want {
				t.Errorf("Requester = %+v, want %+v", got, tt.want)
			}
		})
	}
	if jobs.Admin(root, -1, me) || jobs.Admin(root, me, me) {
		t.Error("an unknown uid, or the job's own account, is the admin")
	}
	if !jobs.Admin(root, 0, me+1) || !jobs.Admin(root, rootOwner, rootOwner+1) {
		t.Error("root, or the root folder's owner, is not the admin")
	}
}

// TestKillPending: a request made while another requester's is in the
// kill file fails with ErrKillPending (it would otherwise pass for done
// while the watcher refuses the other); the same requester's again is
// done; once the watcher dismisses the other, it can be made.
func TestKillPending(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	j := newJob("msg-20260310-120000-alice-0012")
	mustStart(t, root, j, nil)
	if err := jobs.RequestKill(root, agent, j.ID, "mallory", nil); err != nil {
		t.Fatal(err)
	}
	if err := jobs.RequestKill(root, agent, j.ID, "mallory", nil); err != nil {
		t.Errorf("the same requester again: %v, want nil (asked already)", err)
	}
	if err := jobs.RequestKill(root, agent, j.ID, "alice", nil); !errors.Is(err, jobs.ErrKillPending) {
		t.Errorf("another requester's pending: %v, want ErrKillPending", err)
	}
	if err := jobs.DismissKill(root, agent, j.ID); err != nil {
		t.Fatal(err)
	}
	if jobs.KillRequested(root, agent, j.ID) {
		t.Fatal("the kill file is still there after DismissKill")
	}
	if err := jobs.DismissKill(root, agent, j.ID); err != nil {
		t.Errorf("DismissKill with no request: %v", err)
	}
	if err := jobs.RequestKill(root, agent, j.ID, "alice", nil); err != nil {
		t.Fatalf("after the dismissal: %v", err)
	}
	if k, err := jobs.ReadKill(root, agent, j.ID); err != nil || k.By != "alice" {
		t.Errorf("kill file %+v %v, want alice's", k, err)
	}
}
