package jobs_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestKeepExactly: whatever the order in which jobs start and end, an
// agent's folder holds its running jobs and exactly the Keep finished ones
// that ended last; never more finished ones after a job has ended.
func TestKeepExactly(t *testing.T) {
	t.Parallel()
	const n = jobs.Keep + 6
	msg := func(i int) string { return fmt.Sprintf("msg-20260310-120000-alice-%04d", i) }
	type step struct {
		finish bool // else start
		i      int
	}
	seq := func(order ...int) []step { // start every job, then finish them in order
		var s []step
		for i := range n {
			s = append(s, step{i: i})
		}
		for _, i := range order {
			s = append(s, step{finish: true, i: i})
		}
		return s
	}
	var inOrder, reverse []int
	for i := range n {
		inOrder = append(inOrder, i)
		reverse = append(reverse, n-1-i)
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"each starts and ends before the next", func() []step {
			var s []step
			for _, i := range inOrder {
				s = append(s, step{i: i}, step{finish: true, i: i})
			}
			return s
		}()},
		{"all start, end in order", seq(inOrder...)},
		{"all start, end in reverse", seq(reverse...)},
		{"overlapping, three at a time", func() []step {
			var s []step
			for i := range n + 3 {
				if i < n {
					s = append(s, step{i: i})
				}
				if i >= 3 {
					s = append(s, step{finish: true, i: i - 3})
				}
			}
			return s
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			clk := newClock()
			recs := map[int]*jobs.Recorder{}
			var ended []string // ids, in the order they ended
			for _, s := range tt.steps {
				clk.Add(time.Second)
				if !s.finish {
					recs[s.i] = mustStart(t, root, newJob(msg(s.i)), clk.Now)
					continue
				}
				recs[s.i].Finish(jobs.Completed, modelcli.Response{Text: "ok"}, nil)
				if err := recs[s.i].Err(); err != nil {
					t.Fatalf("finishing job %d: %v", s.i, err)
				}
				ended = append(ended, oldID(msg(s.i)))
				delete(recs, s.i)
				running, done := split(t, root)
				if len(done) > jobs.Keep {
					t.Fatalf("after job %d ended: %d finished records, want at most %d", s.i, len(done), jobs.Keep)
				}
				if len(running) != len(recs) {
					t.Fatalf("after job %d ended: %d running records, want %d", s.i, len(running), len(recs))
				}
			}
			_, done := split(t, root)
			want := slices.Clone(ended[len(ended)-jobs.Keep:])
			slices.Sort(want)
			slices.Sort(done)
			if !slices.Equal(done, want) {
				t.Errorf("finished records kept:\n got %v\nwant the %d that ended last %v", done, jobs.Keep, want)
			}
		})
	}
}

// TestKeepExactlyAfterAnswer: a job that asked a question does not count
// until its answer completes it; then the oldest finished record goes.
func TestKeepExactlyAfterAnswer(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	clk := newClock()
	msg := func(i int) string { return fmt.Sprintf("msg-20260310-120000-alice-%04d", i) }
	for i := range jobs.Keep + 1 {
		clk.Add(time.Second)
		status := jobs.Completed
		if i == jobs.Keep {
			status = jobs.AwaitingInput
		}
		mustStart(t, root, newJob(msg(i)), clk.Now).Finish(status, modelcli.Response{Text: "ok"}, nil)
	}
	if _, done := split(t, root); len(done) != jobs.Keep {
		t.Fatalf("%d finished records with one awaiting input, want %d", len(done), jobs.Keep)
	}
	if err := jobs.SetStatus(root, agent, oldID(msg(jobs.Keep)), jobs.Completed); err != nil {
		t.Fatal(err)
	}
	_, done := split(t, root)
	if len(done) != jobs.Keep || slices.Contains(done, oldID(msg(0))) || !slices.Contains(done, oldID(msg(jobs.Keep))) {
		t.Errorf("after the answer, finished records %v: want %d, the oldest gone and the answered kept", done, jobs.Keep)
	}
}

// split lists agent's records: the ids of the running ones and of the
// finished ones.
func split(t *testing.T, root tree.Root) (running, done []string) {
	t.Helper()
	list, err := jobs.List(root, agent)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range list {
		if j.Done() && j.Status != jobs.AwaitingInput {
			done = append(done, j.ID)
		} else {
			running = append(running, j.ID)
		}
	}
	return running, done
}
