package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/presence"
)

// TestPostOverNATS: a signed post sent as a raw NATS request lands as the
// message's file, and it verifies on the mount.
func TestPostOverNATS(t *testing.T) {
	e := newEnv(t)
	srv := natstest.Start(t, true, nil)
	serve(t, e.server(Config{}), srv.URL())
	nc := connect(t, srv.URL())

	m := msg("alice", "dev", "hello over the bridge", e.keys["alice"])
	var rep PostReply
	if r := request(t, nc, OpPost, "alice", postBody(t, m), &rep); !r.OK || rep.ID != m.ID || rep.Existed {
		t.Fatalf("post: %+v %+v", r, rep)
	}
	got, err := channel.Lookup(e.root, "dev", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content.Text != "hello over the bridge" || got.Verify(e.v, "dev") != signing.Verified {
		t.Fatalf("file %+v verdict %v", got, got.Verify(e.v, "dev"))
	}
}

// TestPostRefused: what is not the acting agent's, or does not verify, is
// refused with its code and writes nothing.
func TestPostRefused(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	bobs := msg("bob", "dev", "bob's own", e.keys["bob"])
	forged := msg("alice", "dev", "signed with bob's key", e.keys["bob"])
	stray := msg("alice", "dev", "a key the keyring does not know", e.stray)
	tampered := msg("alice", "dev", "original", e.keys["alice"])
	tampered.Content.Text = "changed after signing"
	otherID := msg("alice", "dev", "id of bob", e.keys["alice"])
	otherID.ID = strings.Replace(otherID.ID, "alice", "bob", 1)
	otherID.Signature = e.keys["alice"].Sign(otherID.Payload())
	wrongCh := msg("alice", "ops", "session_id ops, posted to dev", e.keys["alice"])
	wrongChBody := postBody(t, wrongCh)
	wrongChBody = []byte(strings.Replace(string(wrongChBody), `"channel":"ops"`, `"channel":"dev"`, 1))

	for _, c := range []struct {
		name string
		body []byte
		code string
	}{
		{"unsigned", postBody(t, msg("alice", "dev", "no signature", nil)), CodeForbidden},
		{"forged signature", postBody(t, forged), CodeForbidden},
		{"unknown key", postBody(t, stray), CodeForbidden},
		{"tampered", postBody(t, tampered), CodeForbidden},
		{"another agent's message", postBody(t, bobs), CodeForbidden},
		{"an id of another agent", postBody(t, otherID), CodeForbidden},
		{"session_id not the channel", wrongChBody, CodeInvalid},
		{"not JSON", []byte(`{"channel":`), CodeInvalid},
		{"unknown field", []byte(`{"channel":"dev","message":{},"x":1}`), CodeInvalid},
		{"no message", []byte(`{"channel":"dev"}`), CodeInvalid},
		{"bad channel", []byte(`{"channel":"../x","message":{"from":"alice","content":{"text":"x"}}}`), CodeInvalid},
		{"no id", []byte(`{"channel":"dev","message":{"from":"alice","content":{"text":"x"}}}`), CodeInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := handle(t, s, OpPost, "alice", c.body, nil)
			if r.OK || r.Code != c.code {
				t.Fatalf("reply %+v, want code %s", r, c.code)
			}
			if entries, err := os.ReadDir(e.root.Channel("dev")); err == nil && len(entries) > 0 {
				t.Fatalf("a file was written: %v", entries[0].Name())
			}
		})
	}
	// Bob's own message on bob's subject is fine: the refusal above is
	// about the subject's agent.
	if r := handle(t, s, OpPost, "bob", postBody(t, bobs), nil); !r.OK {
		t.Fatalf("bob's post on bob's subject: %+v", r)
	}
}

// TestPostIdempotent: a retry is ok and existed; another message under the
// same id is a conflict and changes nothing.
func TestPostIdempotent(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	m := msg("alice", "dev", "once", e.keys["alice"])
	for i, want := range []bool{false, true, true} {
		var rep PostReply
		if r := handle(t, s, OpPost, "alice", postBody(t, m), &rep); !r.OK || rep.Existed != want {
			t.Fatalf("post %d: %+v %+v", i, r, rep)
		}
	}
	other := m
	other.Content.Text = "another text"
	other.Signature = e.keys["alice"].Sign(other.Payload())
	if r := handle(t, s, OpPost, "alice", postBody(t, other), nil); r.OK || r.Code != CodeConflict {
		t.Fatalf("conflicting post: %+v", r)
	}
	got, err := channel.Lookup(e.root, "dev", m.ID)
	if err != nil || got.Content.Text != "once" {
		t.Fatalf("file %+v %v", got, err)
	}
}

// TestRead: paging forward after an id, the newest without one, and a
// message too big for a reply returned as omitted.
func TestRead(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{MaxReply: 8 << 10})
	w := channel.Writer{Root: e.root}
	var ids []string
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	for i := range 7 {
		text := fmt.Sprintf("m%d", i)
		if i == 4 {
			text = strings.Repeat("x", 20<<10)
		}
		m := channel.Message{SessionID: "dev", From: "carol", Content: channel.Content{Text: text}}
		w.Now = func() time.Time { return base.Add(time.Duration(i) * time.Second) }
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	read := func(after string, limit int) ReadReply {
		t.Helper()
		b, _ := json.Marshal(ReadRequest{Channel: "dev", After: after, Limit: limit})
		var rep ReadReply
		if r := handle(t, s, OpRead, "alice", b, &rep); !r.OK {
			t.Fatalf("read: %+v", r)
		}
		return rep
	}
	idOf := func(raw json.RawMessage) string {
		var v struct{ ID string }
		_ = json.Unmarshal(raw, &v)
		return v.ID
	}
	rep := read("", 2) // the newest: more says older ones were left out
	if len(rep.Messages) != 2 || idOf(rep.Messages[0]) != ids[5] || idOf(rep.Messages[1]) != ids[6] || !rep.More {
		t.Fatalf("newest 2: %s more %v", rep.Messages, rep.More)
	}
	rep = read(ids[0], 3)
	if len(rep.Messages) != 3 || idOf(rep.Messages[0]) != ids[1] || idOf(rep.Messages[2]) != ids[3] || !rep.More {
		t.Fatalf("after %s: %s more %v", ids[0], rep.Messages, rep.More)
	}
	rep = read(ids[3], 10)
	if len(rep.Messages) != 3 || rep.More {
		t.Fatalf("after %s: %d messages, more %v", ids[3], len(rep.Messages), rep.More)
	}
	var om Omitted
	if err := json.Unmarshal(rep.Messages[0], &om); err != nil || om.ID != ids[4] || !strings.Contains(om.Omitted, "larger than a bridge reply") {
		t.Fatalf("big message: %s", rep.Messages[0])
	}
	if rep = read(ids[6], 10); len(rep.Messages) != 0 || rep.More {
		t.Fatalf("after the newest: %s", rep.Messages)
	}
	b, _ := json.Marshal(ReadRequest{Channel: "dev", After: "nope"})
	if r := handle(t, s, OpRead, "alice", b, nil); r.Code != CodeInvalid {
		t.Fatalf("bad after: %+v", r)
	}
}

// TestPresenceKillWhoStatus: the other ops, on the same files as the local
// commands.
func TestPresenceKillWhoStatus(t *testing.T) {
	e := newEnv(t)
	var published []string
	s := e.server(Config{Host: "mounted", Presence: func(st presence.Status) error {
		published = append(published, st.AgentID)
		return nil
	}})
	st := presence.Status{AgentID: "alice", State: presence.StateAwake, Substate: presence.SubIdle, Host: "laptop", Channel: "dev"}
	st.Sign(e.keys["alice"])
	raw, _ := st.Encode()
	body, _ := json.Marshal(PresenceRequest{Presence: raw})
	if r := handle(t, s, OpPresence, "bob", body, nil); r.Code != CodeForbidden {
		t.Fatalf("alice's presence on bob's subject: %+v", r)
	}
	if r := handle(t, s, OpPresence, "alice", body, nil); !r.OK {
		t.Fatalf("presence: %+v", r)
	}
	unsigned := st
	unsigned.Signature = nil
	raw2, _ := unsigned.Encode()
	body2, _ := json.Marshal(PresenceRequest{Presence: raw2})
	if r := handle(t, s, OpPresence, "alice", body2, nil); r.Code != CodeForbidden {
		t.Fatalf("unsigned presence: %+v", r)
	}
	if len(published) != 1 || published[0] != "alice" {
		t.Fatalf("heartbeats published: %v; want alice's one", published)
	}

	var who WhoReply
	if r := handle(t, s, OpWho, "bob", nil, &who); !r.OK {
		t.Fatalf("who: %+v", r)
	}
	var agents []struct{ Agent, State, Host, Verdict string }
	if err := json.Unmarshal(who.Agents, &agents); err != nil || len(agents) != 1 ||
		agents[0].Agent != "alice" || agents[0].Host != "laptop" || agents[0].Verdict != "verified" || agents[0].State != presence.AwakeIdle {
		t.Fatalf("who: %s %v", who.Agents, err)
	}

	m := msg("alice", "dev", "bob, status?", e.keys["alice"])
	m.To = "bob"
	m.Signature = e.keys["alice"].Sign(m.Payload())
	if r := handle(t, s, OpPost, "alice", postBody(t, m), nil); !r.OK {
		t.Fatalf("post: %+v", r)
	}
	var sr StatusReply
	body, _ = json.Marshal(StatusRequest{Message: m.ID})
	if r := handle(t, s, OpStatus, "alice", body, &sr); !r.OK || !strings.Contains(string(sr.Status), `"bob"`) {
		t.Fatalf("status: %+v %s", r, sr.Status)
	}
	body, _ = json.Marshal(StatusRequest{Message: channel.NewID("alice", time.Now(), "0000")})
	if r := handle(t, s, OpStatus, "alice", body, nil); r.Code != CodeNotFound {
		t.Fatalf("status of nothing: %+v", r)
	}

	// bob's job that answers alice's message: alice may kill it (jobs.MayKill).
	if _, err := jobs.Start(e.root, jobs.Job{ID: "job-1", Agent: "bob", Channel: "dev", Message: m.ID, From: "alice"}, nil); err != nil {
		t.Fatal(err)
	}
	k := jobs.Kill{By: "alice", Host: "laptop", Time: time.Now().UTC().Format(time.RFC3339Nano)}
	k.Signature = e.keys["alice"].Sign(k.Payload("bob", "job-1"))
	kraw, _ := json.Marshal(k)
	body, _ = json.Marshal(KillRequest{Of: "bob", Job: "job-1", Kill: kraw})
	if r := handle(t, s, OpKill, "bob", body, nil); r.Code != CodeForbidden || jobs.KillRequested(e.root, "bob", "job-1") {
		t.Fatalf("alice's kill on bob's subject: %+v", r)
	}
	if r := handle(t, s, OpKill, "alice", body, nil); !r.OK {
		t.Fatalf("kill: %+v", r)
	}
	got, err := jobs.ReadKill(e.root, "bob", "job-1")
	if err != nil || got.Verify(e.v, "bob", "job-1") != signing.Verified {
		t.Fatalf("kill file %+v %v", got, err)
	}
}

// TestRefusedCodes: bad subjects and unknown ops are invalid; a tree that
// cannot be written is unavailable (retryable).
func TestRefusedCodes(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	for _, subj := range []string{"collab.bridge.v1.post", "collab.bridge.v1.nope.alice", "collab.bridge.v1.post.a/b", "x.y"} {
		var r Reply
		_ = json.Unmarshal(s.Handle(subj, []byte(`{}`)), &r)
		if r.OK || r.Code != CodeInvalid {
			t.Errorf("%s: %+v", subj, r)
		}
	}
	if err := os.WriteFile(e.root.Channels(), nil, 0o644); err != nil { // channels/ is a file: nothing can be created
		t.Fatal(err)
	}
	r := handle(t, s, OpPost, "alice", postBody(t, msg("alice", "dev", "x", e.keys["alice"])), nil)
	if r.OK || !Retryable(r.Code) {
		t.Fatalf("post into a broken tree: %+v", r)
	}
	if err := (Reply{Code: CodeForbidden}).Err(); err == nil || errors.Is(err, fs.ErrExist) || err.(*Error).Retryable() {
		t.Fatalf("Err: %v", err)
	}
}

// TestTwoBridges: two bridges in one queue group, concurrent posts (each
// sent twice, as a client's retry would be): every message is one file,
// and every request got an ok.
func TestTwoBridges(t *testing.T) {
	e := newEnv(t)
	srv := natstest.Start(t, true, nil)
	serve(t, e.server(Config{Workers: 4}), srv.URL())
	serve(t, e.server(Config{Workers: 4}), srv.URL())
	nc := connect(t, srv.URL())
	request(t, nc, OpWho, "alice", nil, nil) // both subscribed by now, or one

	const n = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	existed := 0
	for i := range n {
		body := postBody(t, msg("alice", "dev", fmt.Sprintf("burst %d", i), e.keys["alice"]))
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				msg, err := nc.Request(RequestSubject(OpPost, "alice"), body, 10*time.Second)
				if err != nil {
					t.Errorf("post %d: %v", i, err)
					return
				}
				var rep PostReply
				if err := json.Unmarshal(msg.Data, &rep); err != nil || !rep.OK {
					t.Errorf("post %d: %s", i, msg.Data)
				}
				mu.Lock()
				if rep.Existed {
					existed++
				}
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	entries, err := os.ReadDir(e.root.Channel("dev"))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, en := range entries {
		if strings.HasSuffix(en.Name(), ".json") {
			files++
		}
	}
	if files != n || existed != n {
		t.Fatalf("%d files, %d existed; want %d and %d", files, existed, n, n)
	}
}
