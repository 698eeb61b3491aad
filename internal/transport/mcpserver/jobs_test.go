package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// TestJobTools: job_list shows claude's own jobs on its channel and those
// of the agents answering its messages (delegated to), not others';
// job_show shows one with its newest events, bounded, and a running job
// whose watcher is gone as interrupted.
func TestJobTools(t *testing.T) {
	root := tree.Root(t.TempDir())
	at := time.Now().UTC().Add(-time.Hour)
	record := func(j jobs.Job, events int) jobs.Job {
		t.Helper()
		at = at.Add(time.Minute)
		j.ID, j.Host, j.CLI = jobs.NewID(), "vm-2", "fake"
		r, err := jobs.Start(root, j, func() time.Time { return at })
		if err != nil {
			t.Fatal(err)
		}
		for i := range events {
			r.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: fmt.Sprintf("line %d %s", i, strings.Repeat("x", 2000))})
		}
		r.Update(func(*jobs.Job) {}) // write the coalesced progress
		return r.Job()
	}
	own := record(jobs.Job{Agent: "claude", Channel: "dev", Message: "m1", From: "alice"}, 150)
	asked := record(jobs.Job{Agent: "codex", Channel: "dev", Message: "m2", From: "claude"}, 0)
	record(jobs.Job{Agent: "codex", Channel: "dev", Message: "m3", From: "alice"}, 0)  // not claude's business
	record(jobs.Job{Agent: "claude", Channel: "ops", Message: "m4", From: "alice"}, 0) // another channel
	// codex's watcher went OFFLINE: its running job is interrupted.
	if err := presence.Write(root, presence.Status{AgentID: "codex", State: presence.StateOffline, Host: "vm-2"}); err != nil {
		t.Fatal(err)
	}
	_, cs := connect(t, root)

	var list JobListResult
	if e := call(t, cs, "job_list", nil, &list); e != "" {
		t.Fatal(e)
	}
	var got []string
	for _, j := range list.Jobs {
		got = append(got, j.Agent+" "+j.Message+" "+j.Status)
	}
	if want := []string{"codex m2 interrupted", "claude m1 running"}; strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("job_list = %v, want %v", got, want)
	}

	var show JobShowResult
	if e := call(t, cs, "job_show", map[string]any{"id": own.ID}, &show); e != "" {
		t.Fatal(e)
	}
	if show.ID != own.ID || len(show.Events) != maxJobEvents || show.EventsLeftOff != 50 {
		t.Errorf("job_show: %s, %d events, %d left off; want %s, %d, 50", show.ID, len(show.Events), show.EventsLeftOff, own.ID, maxJobEvents)
	}
	if len(show.Events) > 0 && (!strings.HasPrefix(show.Events[0].Text, "line 50 ") || len(show.Events[0].Text) > maxEventText) {
		t.Errorf("first event returned %.20q (%d bytes): want line 50, clipped", show.Events[0].Text, len(show.Events[0].Text))
	}
	if e := call(t, cs, "job_show", map[string]any{"id": "m2"}, &show); e != "" || show.ID != asked.ID || show.Status != jobs.Interrupted {
		t.Errorf("job_show by message id: %q %s %s; want %s interrupted", e, show.ID, show.Status, asked.ID)
	}
	for _, id := range []string{"m3", "m4", "nope", "../x"} {
		if e := call(t, cs, "job_show", map[string]any{"id": id}, nil); !strings.Contains(e, "no job") {
			t.Errorf("job_show %s: %q; want no job", id, e)
		}
	}
	data, _ := json.Marshal(show)
	if strings.Contains(string(data), `"data"`) {
		t.Errorf("job_show returns the CLI's own records: %s", data)
	}
}
