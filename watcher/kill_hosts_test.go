package watcher_test

import (
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
)

// TestKillJobFromAnotherHost: `collab jobs kill` on another host (a second
// bindfs mount of the tree, whose writes raise no inotify event here and
// whose attributes are cached like NFS's) stops the job the watcher on
// the first mount is running.
func TestKillJobFromAnotherHost(t *testing.T) {
	t.Parallel()
	backing := t.TempDir()
	hostA := tree.Root(bindfstest.Mount(t, backing))
	hostB := tree.Root(bindfstest.Mount(t, backing, "-o", "attr_timeout=1,entry_timeout=1,negative_timeout=1"))
	slow := make(chan runCall, 1)
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		slow <- c
		<-c.Ctx.Done()
		return modelcli.Response{}, c.Ctx.Err()
	}}
	cfg := config(hostA, r)
	start(t, cfg)

	m := send(t, hostB, agent, "refactor everything")
	var c runCall
	select {
	case c = <-slow:
	case <-time.After(waitLong):
		t.Fatal("the CLI was not run")
	}
	waitJob(t, hostB, m.ID, "running, seen from host B", func(j jobs.Job) bool { return j.Status == jobs.Running })
	if err := jobs.RequestKill(hostB, agent, jobFor(hostB, agent, m.ID), "alice", nil); err != nil {
		t.Fatalf("RequestKill on host B: %v", err)
	}
	select {
	case <-c.Ctx.Done():
	case <-time.After(waitLong):
		t.Fatal("the CLI on host A was not stopped after the kill request from host B")
	}
	j := waitJob(t, hostB, m.ID, "killed, seen from host B", func(j jobs.Job) bool { return j.Done() })
	if j.Status != jobs.Killed || j.Reply != "" || !strings.Contains(j.Error, "killed") {
		t.Errorf("job status %q reply %q error %q, want killed with no reply", j.Status, j.Reply, j.Error)
	}
	if cl := waitClaim(t, hostB, agent, m.ID); cl.Status != claim.Failed || cl.Reply != "" {
		t.Errorf("claim %s reply %q, want failed with no reply", cl.Status, cl.Reply)
	}
}
