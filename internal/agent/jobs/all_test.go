package jobs_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestListAll(t *testing.T) {
	root := tree.Root(t.TempDir())
	if got, err := jobs.ListAll(root); err != nil || len(got) != 0 {
		t.Fatalf("no state folder: %v, %v; want none", got, err)
	}
	c := newClock()
	for _, j := range []struct{ agent, msg string }{
		{"codex", "msg-20260310-120000-alice-0001"},
		{"claude", "msg-20260310-120000-alice-0002"},
		{"codex", "msg-20260310-120002-alice-0003"},
	} {
		c.Add(time.Second) // started in this order
		rec := newJob(j.msg)
		rec.Agent = j.agent
		mustStart(t, root, rec, c.Now)
	}
	os.WriteFile(filepath.Join(root.States(), "not-a-folder"), nil, 0o666)
	os.Symlink(root.State("codex"), filepath.Join(root.States(), "linked"))
	got, err := jobs.ListAll(root)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range got {
		ids = append(ids, j.Agent+"/"+j.ID)
	}
	want := []string{"codex/job-msg-20260310-120002-alice-0003", "claude/job-msg-20260310-120000-alice-0002", "codex/job-msg-20260310-120000-alice-0001"}
	if len(ids) != len(want) {
		t.Fatalf("ListAll = %v, want %v (newest first, the symlinked agent skipped)", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("ListAll = %v, want %v (newest first, the symlinked agent skipped)", ids, want)
		}
	}
}
