package service

import (
	"context"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
)

// TestJobSince: Job keeps only the events at or after JobQuery.Since,
// and all of them without it.
func TestJobSince(t *testing.T) {
	m, root := testMount(t)
	t0 := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	r, err := jobs.Start(root, jobs.Job{ID: jobs.NewID(), Agent: "codex", Host: "here", Channel: "dev",
		Message: "msg-20260310-120000-alice-0001", From: "alice", CLI: "fake", Started: t0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"early", "on time", "late"} {
		r.Event(modelcli.Event{Time: t0.Add(time.Duration(i) * time.Minute), Kind: modelcli.EventError, Text: text})
	}
	for _, tc := range []struct {
		since time.Time
		want  int
	}{{time.Time{}, 3}, {t0.Add(time.Minute), 2}, {t0.Add(time.Hour), 0}} {
		j, err := m.Job(context.Background(), JobQuery{Since: tc.since}, r.Job().ID)
		if err != nil || len(j.Events) != tc.want {
			t.Errorf("Job since %v: %d events, %v; want %d", tc.since, len(j.Events), err, tc.want)
		}
	}
}
