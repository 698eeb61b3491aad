package service

import (
	"context"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// TestKillJobNow: the kill is asked by file and told at once over NATS
// to the job's agent (what cmd's jobs kill did itself before); without a
// bus, by file only.
func TestKillJobNow(t *testing.T) {
	m, root := testMount(t)
	ctx := context.Background()
	start := func() jobs.Job {
		t.Helper()
		j := jobs.Job{ID: jobs.NewID(), Agent: "codex", Host: "elsewhere", Channel: "dev",
			Message: "msg-20260310-120000-alice-0001", From: "alice", CLI: "fake", Started: time.Now()}
		r, err := jobs.Start(root, j, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.Job()
	}
	s := natstest.Start(t, false, nil)
	bus, err := natsbus.Connect(ctx, natsbus.Options{URL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	told := make(chan string, 1)
	sub, err := bus.SubscribeKills("codex", func(job string) { told <- job })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()

	j := start()
	k, tellErr, err := KillJobNow(ctx, m, bus, "here", Actor{Name: "alice"}, KillRequest{Job: j.ID})
	if err != nil || tellErr != nil || !jobs.KillRequested(root, "codex", j.ID) {
		t.Fatalf("KillJobNow = %+v, %v, %v; want a kill file", k, tellErr, err)
	}
	select {
	case got := <-told:
		if got != j.ID {
			t.Errorf("told to kill %s, want %s", got, j.ID)
		}
	case <-time.After(5 * time.Second):
		t.Error("the watcher was not told over NATS")
	}

	j = start()
	if _, tellErr, err := KillJobNow(ctx, m, nil, "here", Actor{Name: "alice"}, KillRequest{Job: j.ID}); err != nil || tellErr != nil || !jobs.KillRequested(root, "codex", j.ID) {
		t.Errorf("without a bus: %v, %v; want a kill file", tellErr, err)
	}
}
