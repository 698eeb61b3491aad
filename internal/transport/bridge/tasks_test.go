package bridge

import (
	"encoding/json"
	"testing"
	"time"

	"collab/internal/identity/signing"
	"collab/internal/workspace/task"
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
