package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ErrNotAllowed is the error of a kill request its requester may not make
// (see [MayKill]).
var ErrNotAllowed = errors.New("jobs: not allowed")

// ErrKillPending is the error of a kill request made while another
// requester's is still in the job's kill file.
var ErrKillPending = errors.New("jobs: another kill request is pending")

// Requester is who asks to kill a job, as the door that carries the
// request has established it.
type Requester struct {
	// Name is the name the request gives (a kill file's by).
	Name string
	// Verdict is the verdict on the request's signature as Name's, and
	// Authentic whether the reader's trust policy takes the request as
	// Name's ([signing.Verifier.Accepts] on that verdict): it verifies, or
	// Name has no keys and the policy takes such names at their word.
	Verdict   signing.Verdict
	Authentic bool
	// Admin: the request comes from the tree's admin account (see [Admin]).
	Admin bool
}

// MayKill returns nil when r may kill job j, else an error wrapping
// [ErrNotAllowed] that says why. It is the one rule every door applies
// (the watcher, collab jobs kill, the dashboard, the bridge; see the
// package doc): the tree's admin may kill any job; anyone else only a job
// of their own (Name is the job's agent) or one that answers their message
// (Name is the job's From), and only when the request is authentic as
// Name.
func MayKill(j Job, r Requester) error {
	if r.Admin {
		return nil
	}
	if r.Name == "" || r.Name != j.Agent && r.Name != j.From {
		who := "a request that names no one"
		if r.Name != "" {
			who = fmt.Sprintf("%q", modelcli.Clip(r.Name, maxName))
		}
		return fmt.Errorf("%w: %s may not kill %s's job %s: only %s (its agent), %s (who asked for it) or the tree's admin may",
			ErrNotAllowed, who, tree.Printable(j.Agent), j.ID, tree.Printable(j.Agent), askerOf(j))
	}
	if !r.Authentic {
		return fmt.Errorf("%w: the request in %q's name does not verify as theirs (%s), and the trust policy requires it",
			ErrNotAllowed, modelcli.Clip(r.Name, maxName), r.Verdict)
	}
	return nil
}

// maxName bounds a requester's name in an error: a kill file's by is
// anyone's text.
const maxName = 100

func askerOf(j Job) string {
	if j.From == "" {
		return "no one"
	}
	return tree.Printable(j.From)
}

// Requester returns who asks by k, the kill request of job id of agent as
// read from root by [ReadKill], judged by a reader that runs as the
// account runner (the watcher: its own uid) with verifier v and policy p.
func (k Kill) Requester(root tree.Root, v *signing.Verifier, p signing.Policy, agent, id string, runner int) Requester {
	verdict := k.Verify(v, agent, id)
	return Requester{Name: k.By, Verdict: verdict, Authentic: v.Accepts(p, k.By, verdict),
		Admin: Admin(root, k.Owner(), runner)}
}

// Asking returns the requester that a kill request of job id of agent by
// by, signed with s (nil: unsigned), will be to a watcher with verifier v
// under the default trust policy, the admin left out: what a door checks
// with [MayKill] before it writes the request, so that it refuses up front
// what the watcher would ignore.
func Asking(v *signing.Verifier, agent, id, by string, s *signing.Signer) Requester {
	k := Kill{By: by, Time: time.Now().UTC().Format(time.RFC3339Nano)}
	k.Signature = s.Sign(k.Payload(agent, id))
	verdict := k.Verify(v, agent, id)
	return Requester{Name: by, Verdict: verdict, Authentic: v.Accepts(signing.DefaultPolicy, by, verdict)}
}

// Admin reports whether uid is the tree's admin for a job run by the
// account runner: uid is root or owns the tree's root folder (the account
// that ran collab init), and is not runner. On a single-account tree, or
// in a remote host's mirror (where the mirror writes every kill file), the
// files of the job's own account say nothing of who asked: there only the
// names count. A uid below 0 (not known) is no one's.
func Admin(root tree.Root, uid, runner int) bool {
	if uid < 0 || uid == runner {
		return false
	}
	return uid == 0 || uid == keyring.Owner(string(root))
}

// Runner returns the uid of the account that runs job id of agent: the
// owner of its record; -1 when it cannot tell.
func Runner(root tree.Root, agent, id string) int {
	if !tree.ValidName(agent) || checkID(id) != nil {
		return -1
	}
	d, err := safedir.Open(root.Jobs(agent))
	if err != nil {
		return -1
	}
	defer d.Close()
	fi, err := d.Lstat(id + ".json")
	if err != nil {
		return -1
	}
	return owner(fi)
}

// owner returns the uid that owns the file of fi, or -1.
func owner(fi fs.FileInfo) int {
	if uid, _, ok := safedir.Ownership(fi); ok {
		return uid
	}
	return -1
}
