package main

import (
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/testsupport/gittest"
)

// TestDelegateRefusesARefAsBranch: --branch takes a branch's short name by
// git's ref-name rules (worktree.CheckBranch): a full ref, which git would
// make refs/heads/refs/heads/x, and "@", which got through git's own check,
// are usage errors that make no branch.
func TestDelegateRefusesARefAsBranch(t *testing.T) {
	d := newDelegateEnv(t)
	for _, tc := range []struct{ branch, want string }{
		{"refs/heads/x", "give the short name (x)"},
		{"@", "not a valid branch name"},
	} {
		if r := d.delegate(t, "--branch", tc.branch, "work"); r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("--branch %s: exit %d, %q; want %d saying %q", tc.branch, r.code, r.stderr, exitUsage, tc.want)
		}
	}
	if refs := gittest.Git(t, d.repo, "for-each-ref", "--format=%(refname)", "refs/heads/"); refs != "refs/heads/main" {
		t.Errorf("branches after refused delegates:\n%s", refs)
	}
}
