package task_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
	"github.com/collabdev/collab/internal/workspace/task"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o666); err != nil {
		t.Fatal(err)
	}
}

// twoHosts returns two bindfs views of one folder: two hosts sharing an
// NFS export. Host B caches names and attributes as an NFS client does.
func twoHosts(t *testing.T) (a, b tree.Root) {
	t.Helper()
	backing := t.TempDir()
	a = tree.Root(bindfstest.Mount(t, backing))
	b = tree.Root(bindfstest.Mount(t, backing, "-o", "attr_timeout=1,entry_timeout=1,negative_timeout=1"))
	return a, b
}

// TestConcurrentClaimersTwoHosts: 20 agents on two hosts claim every task
// at once; exactly one wins each, and every other one is told who did.
func TestConcurrentClaimersTwoHosts(t *testing.T) {
	hostA, hostB := twoHosts(t)
	const tasks, claimers = 5, 20
	setup := newBoard(t, hostA, nil)
	for i := range tasks {
		add(t, setup, fmt.Sprintf("task %d", i+1))
	}
	type result struct {
		agent, task string
		err         error
	}
	results := make(chan result, tasks*claimers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range claimers {
		root := hostA
		if c%2 == 1 {
			root = hostB
		}
		agent := fmt.Sprintf("agent-%02d", c)
		b := newBoard(t, root, nil)
		wg.Go(func() {
			<-start
			for i := range tasks {
				id := task.FormatID(i + 1)
				_, err := b.Claim(id, agent)
				results <- result{agent, id, err}
			}
		})
	}
	close(start)
	wg.Wait()
	close(results)

	winners := map[string][]string{}
	var losers []result
	for r := range results {
		var ce *task.ClaimedError
		switch {
		case r.err == nil:
			winners[r.task] = append(winners[r.task], r.agent)
		case errors.As(r.err, &ce):
			losers = append(losers, r)
		default:
			t.Errorf("%s claiming %s: unexpected error %v", r.agent, r.task, r.err)
		}
	}
	for i := range tasks {
		id := task.FormatID(i + 1)
		if len(winners[id]) != 1 {
			t.Errorf("%s was won by %v, want exactly one agent", id, winners[id])
		}
	}
	for _, l := range losers {
		var ce *task.ClaimedError
		errors.As(l.err, &ce)
		if w := winners[l.task]; len(w) == 1 && ce.Owner != w[0] {
			t.Errorf("%s was told %s is claimed by %s; the winner is %s", l.agent, l.task, ce.Owner, w[0])
		}
	}
	if len(losers) != tasks*(claimers-1) {
		t.Errorf("%d losers, want %d", len(losers), tasks*(claimers-1))
	}
	// Each task has one claimed event and nothing else, seen from either host.
	for _, root := range []tree.Root{hostA, hostB} {
		b := newBoard(t, root, nil)
		for i := range tasks {
			id := task.FormatID(i + 1)
			tk, evs, err := b.Events(id)
			if err != nil || len(evs) != 1 || evs[0].Event != task.EvClaimed || tk.Owner != winners[id][0] {
				t.Errorf("%s from %s: %+v, events %+v, err %v; want one claim by %v", id, root, tk, evs, err, winners[id])
			}
		}
	}
}

// TestConcurrentNextTwoHosts: 20 agents on two hosts take tasks with Next
// until none is left; every task is taken by exactly one agent.
func TestConcurrentNextTwoHosts(t *testing.T) {
	hostA, hostB := twoHosts(t)
	const tasks, agents = 30, 20
	setup := newBoard(t, hostA, nil)
	for i := range tasks {
		add(t, setup, fmt.Sprintf("task %d", i+1))
	}
	var mu sync.Mutex
	taken := map[string][]string{}
	var wg sync.WaitGroup
	for c := range agents {
		root := hostA
		if c%2 == 1 {
			root = hostB
		}
		agent := fmt.Sprintf("agent-%02d", c)
		b := newBoard(t, root, nil)
		wg.Go(func() {
			for {
				got, err := b.Next(agent)
				if errors.Is(err, task.ErrNoneReady) {
					return
				}
				if err != nil {
					t.Errorf("%s: Next: %v", agent, err)
					return
				}
				mu.Lock()
				taken[got.ID] = append(taken[got.ID], agent)
				mu.Unlock()
				if _, err := b.Finish(got.ID, agent, "ok"); err != nil {
					t.Errorf("%s: done %s: %v", agent, got.ID, err)
				}
			}
		})
	}
	wg.Wait()
	for i := range tasks {
		id := task.FormatID(i + 1)
		if len(taken[id]) != 1 {
			t.Errorf("%s was taken by %v, want exactly one agent", id, taken[id])
		}
	}
}

// TestConcurrentAddTwoHosts: tasks added at once from two hosts get
// distinct ids.
func TestConcurrentAddTwoHosts(t *testing.T) {
	hostA, hostB := twoHosts(t)
	const n = 20
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		root := hostA
		if i%2 == 1 {
			root = hostB
		}
		b := newBoard(t, root, nil)
		wg.Go(func() {
			got, err := b.Add(task.NewTask{Title: fmt.Sprint("task ", i), By: "lead"})
			if err != nil {
				t.Error(err)
				return
			}
			ids <- got.ID
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("id %s given twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct ids, want %d", len(seen), n)
	}
}

// TestConcurrentSweepTwoHosts: hosts that find one stale claim at once
// release it once.
func TestConcurrentSweepTwoHosts(t *testing.T) {
	hostA, hostB := twoHosts(t)
	clk := &clock{t: time.Now().UTC()}
	setup := newBoard(t, hostA, clk)
	add(t, setup, "job")
	if _, err := setup.Claim("t1", "gone"); err != nil {
		t.Fatal(err)
	}
	clk.Add(task.DefaultGrace + time.Minute)
	var wg sync.WaitGroup
	for i := range 10 {
		root := hostA
		if i%2 == 1 {
			root = hostB
		}
		b := newBoard(t, root, clk)
		wg.Go(func() {
			if _, err := b.Sweep(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	_, evs, err := setup.Events("t1")
	if err != nil || len(evs) != 2 || evs[1].Event != task.EvReleased {
		t.Errorf("events = %+v, %v; want the claim and one release", evs, err)
	}
}
