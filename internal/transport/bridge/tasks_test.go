package bridge

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workspace/task"
)

func taskBody(t *testing.T, r TaskRequest) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signedEvent returns agent's event kind on task id of dev as its next
// event, seq, signed with key (nil: unsigned), edited by edit.
func signedEvent(t *testing.T, agent, kind, text, id string, seq int, key *signing.Signer, edit func(*task.Event)) []byte {
	t.Helper()
	e, err := task.OwnEvent(kind, agent, text, task.Checkpoint{})
	if err != nil {
		t.Fatal(err)
	}
	e.Seq, e.Time, e.Host = seq, time.Now().UTC(), "laptop"
	if edit != nil {
		edit(&e)
	}
	if key != nil {
		e.Signature = key.Sign(e.Payload("dev", id))
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return taskBody(t, TaskRequest{Action: "event", Channel: "dev", ID: id, Event: b})
}

// TestTaskOps: a remote agent's signed claim, checkpoint and done land on
// the board as its own verified events, and the bridge refuses another
// agent's event, a forged or missing signature, an event the rules do not
// make, a stale number, bad names; it never signs.
func TestTaskOps(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{Host: "mounted"})
	var add TaskReply
	if r := handle(t, s, OpTask, "alice", taskBody(t, TaskRequest{Action: "add", Channel: "dev", Title: "write the parser"}), &add); !r.OK || add.Task == nil || add.Task.ID != "t1" || add.Task.CreatedBy != "alice" {
		t.Fatalf("add: %+v %+v", r, add)
	}
	alice, bob := e.keys["alice"], e.keys["bob"]
	refused := []struct {
		name, agent string
		body        []byte
		code        string
	}{
		{"another agent's event", "bob", signedEvent(t, "alice", task.EvClaimed, "", "t1", 1, alice, nil), CodeForbidden},
		{"forged signature", "alice", signedEvent(t, "alice", task.EvClaimed, "", "t1", 1, e.stray, nil), CodeForbidden},
		{"unsigned", "alice", signedEvent(t, "alice", task.EvClaimed, "", "t1", 1, nil, nil), CodeForbidden},
		{"signed, then changed", "alice", nil, CodeInvalid},
		{"a claim for another owner", "alice", signedEvent(t, "alice", task.EvClaimed, "", "t1", 1, alice, func(e *task.Event) { e.Owner = "bob" }), CodeInvalid},
		{"a release", "alice", signedEvent(t, "alice", task.EvClaimed, "", "t1", 1, alice, func(e *task.Event) { e.Event, e.Status, e.Owner, e.Note = task.EvReleased, task.Pending, "", "x" }), CodeInvalid},
		{"an old time", "alice", signedEvent(t, "alice", task.EvClaimed, "", "t1", 1, alice, func(e *task.Event) { e.Time = e.Time.Add(-time.Hour) }), CodeInvalid},
		{"a stale number", "alice", signedEvent(t, "alice", task.EvClaimed, "", "t1", 5, alice, nil), CodeConflict},
		{"done before claiming", "alice", signedEvent(t, "alice", task.EvDone, "ok", "t1", 1, alice, nil), CodeConflict},
		{"a missing task", "alice", signedEvent(t, "alice", task.EvClaimed, "", "t9", 1, alice, nil), CodeNotFound},
		{"a bad channel", "alice", []byte(`{"action":"list","channel":"../x"}`), CodeInvalid},
		{"a bad id", "alice", []byte(`{"action":"show","channel":"dev","id":"../t1"}`), CodeInvalid},
		{"an unknown action", "alice", []byte(`{"action":"sweep","channel":"dev"}`), CodeInvalid},
		{"an add with an event", "alice", []byte(`{"action":"add","channel":"dev","title":"x","event":{}}`), CodeInvalid},
	}
	for _, c := range refused {
		if c.name == "signed, then changed" {
			var req TaskRequest
			_ = json.Unmarshal(signedEvent(t, "alice", task.EvClaimed, "", "t1", 1, alice, nil), &req)
			var ev task.Event
			_ = json.Unmarshal(req.Event, &ev)
			ev.Host = "elsewhere" // after signing
			req.Event, _ = json.Marshal(ev)
			c.body, c.code = taskBody(t, req), CodeForbidden
		}
		if r := handle(t, s, OpTask, c.agent, c.body, nil); r.OK || r.Code != c.code {
			t.Errorf("%s: %+v, want %s", c.name, r, c.code)
		}
	}
	var got TaskReply
	if r := handle(t, s, OpTask, "alice", signedEvent(t, "alice", task.EvClaimed, "", "t1", 1, alice, nil), &got); !r.OK || got.Task.Status != task.Claimed || got.Task.Owner != "alice" {
		t.Fatalf("claim: %+v %+v", r, got)
	}
	if r := handle(t, s, OpTask, "bob", signedEvent(t, "bob", task.EvClaimed, "", "t1", 2, bob, nil), &got); r.Code != CodeConflict || got.Refusal != "claimed" {
		t.Fatalf("bob's claim of alice's task: %+v %+v", r, got)
	}
	if r := handle(t, s, OpTask, "bob", signedEvent(t, "bob", task.EvCheckpoint, "mine now", "t1", 2, bob, nil), &got); r.Code != CodeConflict || got.Refusal != "not-owner" {
		t.Fatalf("bob's checkpoint on alice's task: %+v %+v", r, got)
	}
	if r := handle(t, s, OpTask, "alice", signedEvent(t, "alice", task.EvCheckpoint, "half", "t1", 2, alice, nil), &got); !r.OK {
		t.Fatalf("checkpoint: %+v", r)
	}
	if r := handle(t, s, OpTask, "alice", signedEvent(t, "alice", task.EvCheckpoint, "again", "t1", 2, alice, nil), &got); r.Code != CodeConflict || got.Refusal != "stale" {
		t.Fatalf("a taken number: %+v %+v", r, got)
	}
	if r := handle(t, s, OpTask, "alice", signedEvent(t, "alice", task.EvDone, "parsed", "t1", 3, alice, nil), &got); !r.OK || got.Task.Status != task.Done {
		t.Fatalf("done: %+v %+v", r, got)
	}
	var show TaskReply
	if r := handle(t, s, OpTask, "bob", taskBody(t, TaskRequest{Action: "show", Channel: "dev", ID: "t1"}), &show); !r.OK || len(show.Events) != 3 {
		t.Fatalf("show: %+v %+v", r, show)
	}
	for _, ev := range show.Events {
		if ev.Verdict != signing.Verified.String() || ev.Agent != "alice" || ev.Host != "laptop" {
			t.Errorf("event %d: %+v", ev.Seq, ev)
		}
	}
	// The board on the mount agrees: alice's verified events.
	b, _ := task.New(e.root, "dev")
	b.Verifier = e.v
	tk, evs, err := b.Events("t1")
	if err != nil || tk.Status != task.Done || tk.Unverified != 0 || len(evs) != 3 {
		t.Fatalf("on the mount: %+v %d %v", tk, len(evs), err)
	}
	var ctxr TaskReply
	if r := handle(t, s, OpTask, "bob", taskBody(t, TaskRequest{Action: "context", Channel: "dev", ID: "t1"}), &ctxr); !r.OK || ctxr.Context == nil || ctxr.Context.Task.Outcome != "parsed" {
		t.Fatalf("context: %+v %+v", r, ctxr)
	}
	var ls TaskReply
	if r := handle(t, s, OpTask, "bob", taskBody(t, TaskRequest{Action: "list", Channel: "dev"}), &ls); !r.OK || len(ls.Tasks) != 1 {
		t.Fatalf("list: %+v %+v", r, ls)
	}
}

// signedWorktree returns agent's worktree event on task id of dev as its
// event seq, signed with key, edited by edit after signing.
func signedWorktree(t *testing.T, agent, id string, seq int, key *signing.Signer, path string, edit func(*task.Event)) []byte {
	t.Helper()
	e, err := task.WorktreeEvent(agent, "/w/proj/t1-parse", "t1-parse")
	if err != nil {
		t.Fatal(err)
	}
	e.Worktree, e.Seq, e.Time, e.Host = path, seq, time.Now().UTC(), "laptop"
	e.Signature = key.Sign(e.Payload("dev", id))
	if edit != nil {
		edit(&e)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return taskBody(t, TaskRequest{Action: "event", Channel: "dev", ID: id, Event: b})
}

// TestTaskWorktreeEvent: the owner's signed worktree event lands on the
// board as RecordWorktree writes it (worktree, branch, the owner's host);
// the bridge refuses one sent by another agent, one in another agent's
// name that does not hold the task, a relative path, and a path changed
// after signing.
func TestTaskWorktreeEvent(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{Host: "mounted"})
	for range 2 {
		if r := handle(t, s, OpTask, "alice", taskBody(t, TaskRequest{Action: "add", Channel: "dev", Title: "parse"}), nil); !r.OK {
			t.Fatalf("add: %+v", r)
		}
	}
	alice, bob := e.keys["alice"], e.keys["bob"]
	if r := handle(t, s, OpTask, "alice", signedEvent(t, "alice", task.EvClaimed, "", "t1", 1, alice, nil), nil); !r.OK {
		t.Fatalf("claim: %+v", r)
	}
	const path = "/w/proj/t1-parse"
	var got TaskReply
	refused := []struct {
		name, agent string
		body        []byte
		code        string
		refusal     string
	}{
		{"another agent's event", "bob", signedWorktree(t, "alice", "t1", 2, alice, path, nil), CodeForbidden, ""},
		{"not the owner", "bob", signedWorktree(t, "bob", "t1", 2, bob, path, nil), CodeConflict, "not-owner"},
		{"a task not claimed", "alice", signedWorktree(t, "alice", "t2", 1, alice, path, nil), CodeConflict, "not-owner"},
		{"a relative path", "alice", signedWorktree(t, "alice", "t1", 2, alice, "w/proj/t1-parse", nil), CodeInvalid, ""},
		{"a path changed after signing", "alice", signedWorktree(t, "alice", "t1", 2, alice, path, func(e *task.Event) { e.Worktree = "/elsewhere" }), CodeForbidden, ""},
		{"a worktree on a checkpoint", "alice", signedEvent(t, "alice", task.EvCheckpoint, "half", "t1", 2, alice, func(e *task.Event) { e.Worktree, e.Branch = path, "t1-parse" }), CodeInvalid, ""},
	}
	for _, c := range refused {
		got = TaskReply{}
		if r := handle(t, s, OpTask, c.agent, c.body, &got); r.OK || r.Code != c.code || got.Refusal != c.refusal {
			t.Errorf("%s: %+v %q, want %s %q", c.name, r, got.Refusal, c.code, c.refusal)
		}
	}
	if r := handle(t, s, OpTask, "alice", signedWorktree(t, "alice", "t1", 2, alice, path, nil), &got); !r.OK || got.Task == nil {
		t.Fatalf("alice's worktree event: %+v %+v", r, got)
	}
	b, _ := task.New(e.root, "dev")
	b.Verifier = e.v
	tk, evs, err := b.Events("t1")
	if err != nil || len(evs) != 2 || tk.Status != task.Claimed || tk.Owner != "alice" || tk.Worktree != path || tk.Branch != "t1-parse" || tk.WorktreeHost != "laptop" || tk.Unverified != 0 {
		t.Fatalf("on the mount: %+v %d %v", tk, len(evs), err)
	}
	if evs[1].Event != task.EvWorktree || evs[1].Verdict != signing.Verified {
		t.Errorf("the worktree event: %+v", evs[1])
	}
}
