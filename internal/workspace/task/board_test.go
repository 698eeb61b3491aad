package task_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/presence"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var t0 = time.Date(2026, 1, 11, 16, 0, 0, 0, time.UTC)

func newBoard(t *testing.T, root tree.Root, clk *clock) *task.Board {
	t.Helper()
	b, err := task.New(root, "dev")
	if err != nil {
		t.Fatal(err)
	}
	b.Host = "test-host"
	if clk != nil {
		b.Now = clk.Now
	}
	return b
}

func add(t *testing.T, b *task.Board, title string, deps ...string) task.Task {
	t.Helper()
	got, err := b.Add(task.NewTask{Title: title, Depends: deps, By: "lead"})
	if err != nil {
		t.Fatalf("add %q: %v", title, err)
	}
	return got
}

func TestAddAndGet(t *testing.T) {
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	t1 := add(t, b, "write the parser")
	t2, err := b.Add(task.NewTask{Title: "test it", Body: "fuzz too", Depends: []string{"t1", "t1"}, By: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	if t1.ID != "t1" || t2.ID != "t2" {
		t.Errorf("ids = %s, %s; want t1, t2", t1.ID, t2.ID)
	}
	got, err := b.Get("t2")
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "test it" || got.Body != "fuzz too" || !slices.Equal(got.Depends, []string{"t1"}) ||
		got.Status != task.Pending || got.CreatedBy != "lead" || !got.Created.Equal(t0) || got.Ready ||
		!slices.Equal(got.Blockers, []string{"t1"}) || got.Channel != "dev" {
		t.Errorf("t2 = %+v", got)
	}
	if g, err := b.Get("t1"); err != nil || !g.Ready {
		t.Errorf("t1 = %+v, %v; want ready", g, err)
	}

	bad := []struct {
		name string
		nt   task.NewTask
		want string
	}{
		{"no title", task.NewTask{Title: " ", By: "lead"}, "title is empty"},
		{"title with newline", task.NewTask{Title: "a\nb", By: "lead"}, "line break"},
		{"long title", task.NewTask{Title: strings.Repeat("x", task.MaxTitle+1), By: "lead"}, "longer"},
		{"long body", task.NewTask{Title: "x", Body: strings.Repeat("x", task.MaxText+1), By: "lead"}, "longer"},
		{"bad agent", task.NewTask{Title: "x", By: "../x"}, "invalid name"},
		{"unknown dependency", task.NewTask{Title: "x", Depends: []string{"t9"}, By: "lead"}, "no such task"},
		{"bad dependency", task.NewTask{Title: "x", Depends: []string{"../t1"}, By: "lead"}, "not a task id"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Add(tt.nt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Add = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := b.Get("t3"); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("Get(t3) = %v, want ErrNotFound", err)
	}
	if _, err := b.Get("../../etc"); !errors.Is(err, task.ErrBadID) {
		t.Errorf("Get(../../etc) = %v, want ErrBadID", err)
	}
	if _, err := task.New(tree.Root(t.TempDir()), "../x"); !errors.Is(err, tree.ErrBadName) {
		t.Errorf("New(../x) = %v, want ErrBadName", err)
	}
}

func TestLifecycle(t *testing.T) {
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	add(t, b, "one")
	add(t, b, "two", "t1")

	steps := []struct {
		name    string
		do      func() (task.Task, error)
		wantErr error  // nil: success
		status  string // on success
	}{
		{"checkpoint before claim", func() (task.Task, error) { return b.Checkpoint("t1", "codex", "x") }, task.ErrNotOwner, ""},
		{"done before claim", func() (task.Task, error) { return b.Finish("t1", "codex", "x") }, task.ErrNotOwner, ""},
		{"claim blocked task", func() (task.Task, error) { return b.Claim("t2", "codex") }, task.ErrNotReady, ""},
		{"claim", func() (task.Task, error) { return b.Claim("t1", "codex") }, nil, task.Claimed},
		{"claim again by owner", func() (task.Task, error) { return b.Claim("t1", "codex") }, nil, task.Claimed},
		{"claim by another", func() (task.Task, error) { return b.Claim("t1", "gemini") }, &task.ClaimedError{}, ""},
		{"checkpoint by another", func() (task.Task, error) { return b.Checkpoint("t1", "gemini", "x") }, task.ErrNotOwner, ""},
		{"empty checkpoint", func() (task.Task, error) { return b.Checkpoint("t1", "codex", " ") }, errors.New("empty"), ""},
		{"checkpoint", func() (task.Task, error) { return b.Checkpoint("t1", "codex", "half way") }, nil, task.Claimed},
		{"done", func() (task.Task, error) { return b.Finish("t1", "codex", "parser in") }, nil, task.Done},
		{"claim done task", func() (task.Task, error) { return b.Claim("t1", "gemini") }, task.ErrClosed, ""},
		{"fail done task", func() (task.Task, error) { return b.Fail("t1", "codex", "x") }, task.ErrClosed, ""},
		{"claim unblocked task", func() (task.Task, error) { return b.Claim("t2", "gemini") }, nil, task.Claimed},
		{"fail", func() (task.Task, error) { return b.Fail("t2", "gemini", "no tests") }, nil, task.Failed},
	}
	for _, s := range steps {
		got, err := s.do()
		switch want := s.wantErr.(type) {
		case nil:
			if err != nil || got.Status != s.status {
				t.Fatalf("%s: status %q, err %v; want %s", s.name, got.Status, err, s.status)
			}
		case *task.ClaimedError:
			var ce *task.ClaimedError
			if !errors.As(err, &ce) || ce.Owner != "codex" || err.Error() != "task t1 is claimed by codex" {
				t.Fatalf("%s: err %v; want claimed by codex", s.name, err)
			}
		default:
			if err == nil || !errors.Is(err, want) && !strings.Contains(err.Error(), want.Error()) {
				t.Fatalf("%s: err %v; want %v", s.name, err, want)
			}
		}
	}
	t1, evs, err := b.Events("t1")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Event+":"+e.Agent)
	}
	if want := []string{"claimed:codex", "checkpoint:codex", "done:codex"}; !slices.Equal(kinds, want) {
		t.Errorf("events of t1 = %v, want %v", kinds, want)
	}
	if t1.Outcome != "parser in" || t1.Summary != "half way" || t1.Events != 3 {
		t.Errorf("t1 = %+v", t1)
	}
	if t2, _ := b.Get("t2"); t2.Error != "no tests" || t2.Status != task.Failed {
		t.Errorf("t2 = %+v", t2)
	}
}

func TestNextFollowsDependencies(t *testing.T) {
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	add(t, b, "schema")
	add(t, b, "migration", "t1")
	add(t, b, "docs")
	add(t, b, "release", "t2", "t3")

	next := func(agent string) string {
		t.Helper()
		got, err := b.Next(agent)
		if errors.Is(err, task.ErrNoneReady) {
			return "none"
		}
		if err != nil {
			t.Fatal(err)
		}
		if got.Owner != agent || got.Status != task.Claimed {
			t.Fatalf("Next(%s) = %+v", agent, got)
		}
		return got.ID
	}
	done := func(id, agent string) {
		t.Helper()
		if _, err := b.Finish(id, agent, "ok"); err != nil {
			t.Fatal(err)
		}
	}
	if got := next("a"); got != "t1" {
		t.Fatalf("first next = %s, want t1", got)
	}
	if got := next("b"); got != "t3" {
		t.Fatalf("second next = %s, want t3 (t2 waits for t1)", got)
	}
	if got := next("c"); got != "none" {
		t.Fatalf("third next = %s, want none", got)
	}
	done("t1", "a")
	if got := next("c"); got != "t2" {
		t.Fatalf("next after t1 done = %s, want t2", got)
	}
	done("t2", "c")
	if got := next("a"); got != "none" {
		t.Fatalf("next with t3 still open = %s, want none", got)
	}
	done("t3", "b")
	if got := next("a"); got != "t4" {
		t.Fatalf("last next = %s, want t4", got)
	}
	tasks, bad, err := b.List()
	if err != nil || len(bad) > 0 || len(tasks) != 4 {
		t.Fatalf("List = %d tasks, bad %v, err %v", len(tasks), bad, err)
	}
	for _, tk := range tasks {
		want := task.Done
		if tk.ID == "t4" {
			want = task.Claimed
		}
		if tk.Status != want {
			t.Errorf("%s is %s, want %s", tk.ID, tk.Status, want)
		}
	}
}

// TestStaleClaimReleased: a claim is released when its owner shows no sign
// of life for the grace period, never while it is awake; the release is an
// event.
func TestStaleClaimReleased(t *testing.T) {
	const grace = 5 * time.Minute
	tests := []struct {
		name     string
		presence *presence.Status // nil: none
		wait     time.Duration    // after the claim
		checkpt  time.Duration    // > 0: the owner checkpoints this long after the claim
		released bool
	}{
		{"awake and fresh", &presence.Status{State: presence.StateAwake, Substate: presence.SubWorking}, time.Hour, 0, false},
		{"no presence, within grace", nil, grace - time.Second, 0, false},
		{"no presence, past grace", nil, grace + time.Second, 0, true},
		{"no presence, checkpoint keeps it", nil, grace + time.Minute, 2 * time.Minute, false},
		{"offline, past grace", &presence.Status{State: presence.StateOffline}, grace + time.Second, 0, true},
		{"stale heartbeat", &presence.Status{State: presence.StateAwake, Substate: presence.SubIdle}, grace + 2*time.Minute, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			clk := &clock{t: t0}
			b := newBoard(t, root, clk)
			b.Grace = grace
			add(t, b, "job")
			if _, err := b.Claim("t1", "codex"); err != nil {
				t.Fatal(err)
			}
			if tt.checkpt > 0 {
				clk.Add(tt.checkpt)
				if _, err := b.Checkpoint("t1", "codex", "still here"); err != nil {
					t.Fatal(err)
				}
				clk.Add(tt.wait - tt.checkpt)
			} else {
				clk.Add(tt.wait)
			}
			if tt.presence != nil {
				s := *tt.presence
				s.AgentID, s.Host = "codex", "elsewhere"
				s.Timestamp = presence.FormatTime(t0) // written at the claim
				if s.State == presence.StateAwake && !tt.released {
					s.Timestamp = presence.FormatTime(clk.Now()) // beating
				}
				if err := presence.Write(root, s); err != nil {
					t.Fatal(err)
				}
			}
			got, err := b.Claim("t1", "gemini")
			var ce *task.ClaimedError
			if tt.released {
				if err != nil || got.Owner != "gemini" {
					t.Fatalf("claim by gemini = %+v, %v; want it released and claimed", got, err)
				}
				_, evs, _ := b.Events("t1")
				if len(evs) != 3 || evs[1].Event != task.EvReleased || evs[1].Status != task.Pending ||
					!strings.Contains(evs[1].Note, "claim of codex released") || evs[2].Owner != "gemini" {
					t.Errorf("events = %+v; want claimed, released (with a note), claimed", evs)
				}
			} else if !errors.As(err, &ce) || ce.Owner != "codex" {
				t.Fatalf("claim by gemini = %v; want claimed by codex", err)
			}
		})
	}
}

// TestSweepByList: listing releases a stale claim back to pending.
func TestSweepByList(t *testing.T) {
	clk := &clock{t: t0}
	b := newBoard(t, tree.Root(t.TempDir()), clk)
	add(t, b, "job")
	if _, err := b.Claim("t1", "codex"); err != nil {
		t.Fatal(err)
	}
	clk.Add(task.DefaultGrace + time.Second)
	tasks, _, err := b.List()
	if err != nil || len(tasks) != 1 || tasks[0].Status != task.Pending || !tasks[0].Ready {
		t.Fatalf("List = %+v, %v; want t1 pending and ready", tasks, err)
	}
	if evs, _ := b.Sweep(); len(evs) != 0 {
		t.Errorf("a second sweep released %d claims, want 0", len(evs))
	}
	// The old owner learns it lost the task.
	if _, err := b.Finish("t1", "codex", "late"); !errors.Is(err, task.ErrNotOwner) {
		t.Errorf("late done = %v, want ErrNotOwner", err)
	}
}

// TestIgnoresForeignFiles: junk in the board folder is no task, and a
// malformed event is skipped.
func TestIgnoresForeignFiles(t *testing.T) {
	root := tree.Root(t.TempDir())
	b := newBoard(t, root, &clock{t: t0})
	add(t, b, "job")
	writeFile(t, root.Tasks("dev")+"/notes.txt", "x")
	writeFile(t, root.Tasks("dev")+"/t2.json", "{not json")
	writeFile(t, root.Tasks("dev")+"/t1/000001.json", `{"seq":1,"event":"claimed","status":"claimed","agent":"x"}`) // no owner
	tasks, bad, err := b.List()
	if err != nil || len(tasks) != 1 || len(bad) != 1 {
		t.Fatalf("List = %+v, bad %v, err %v; want t1 and one bad file", tasks, bad, err)
	}
	got, err := b.Claim("t1", "codex")
	if err != nil || got.Owner != "codex" || got.Events != 2 {
		t.Fatalf("claim over a malformed event = %+v, %v; want claimed as event 2", got, err)
	}
	if _, err := b.Add(task.NewTask{Title: "next", By: "lead"}); err != nil {
		t.Fatal(err)
	}
	if tk, err := b.Get("t3"); err != nil || tk.Title != "next" {
		t.Errorf("the task after a bad t2 = %+v, %v; want t3", tk, err)
	}
}

// TestOwnEventsAsSigned: the owner's events the board writes are the
// ones OwnEvent makes (what a remote agent signs): an empty text is
// invalid for each, nothing is written, and a plain checkpoint is a
// progress checkpoint.
func TestOwnEventsAsSigned(t *testing.T) {
	root := tree.Root(t.TempDir())
	b := newBoard(t, root, &clock{})
	add(t, b, "one")
	if _, err := b.Claim("t1", "a"); err != nil {
		t.Fatal(err)
	}
	for what, f := range map[string]func() (task.Task, error){
		"checkpoint: the text is empty": func() (task.Task, error) { return b.Checkpoint("t1", "a", " ") },
		"done: the outcome is empty":    func() (task.Task, error) { return b.Finish("t1", "a", "") },
		"fail: the error is empty":      func() (task.Task, error) { return b.Fail("t1", "a", "\n") },
	} {
		if _, err := f(); !errors.Is(err, task.ErrInvalid) || err.Error() != what {
			t.Errorf("%s: got %v; want it, invalid", what, err)
		}
	}
	if _, err := b.Checkpoint("t1", "a", "half"); err != nil {
		t.Fatal(err)
	}
	_, evs, err := b.Events("t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("events %+v; want claimed, one checkpoint", evs)
	}
	want, err := task.OwnEvent(task.EvCheckpoint, "a", "half", task.Checkpoint{})
	if err != nil {
		t.Fatal(err)
	}
	got := evs[1]
	if got.Event != want.Event || got.Type != task.CkProgress || got.Summary != want.Summary || got.Owner != "a" || got.Agent != "a" {
		t.Errorf("checkpoint %+v; want OwnEvent's %+v", got, want)
	}
}
