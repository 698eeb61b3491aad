package bridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
)

const fsID = "msg-20261125-010000-carol-00aa"

// claimJSON is generation gen of the claim of fsID in ch, by agent's
// watcher, signed with key as agent's folder's (nil: unsigned).
func claimJSON(t testing.TB, ch, agent string, gen int, key *signing.Signer) []byte {
	t.Helper()
	now := time.Now().UTC()
	c := claim.Claim{Message: fsID, Channel: ch, Owner: claim.Owner{Agent: agent, Host: "remote", PID: 7, Instance: "i1"},
		Status: claim.Working, Claimed: now, Heartbeat: now, Takeovers: gen}
	c.Signature = key.Sign(c.Payload(ch, agent, fsID, gen))
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tokenJSON(t testing.TB, ch, agent string, gen int, key *signing.Signer) []byte {
	t.Helper()
	tk := claim.Token{Reply: "msg-20261125-010001-" + agent + "-00bb", Owner: claim.Owner{Agent: agent, Instance: "i1"}, Time: time.Now().UTC()}
	tk.Signature = key.Sign(tk.Payload(ch, agent, fsID, gen))
	b, err := json.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func seenJSON(t testing.TB, ch, agent string, key *signing.Signer) []byte {
	t.Helper()
	s := delivery.SeenFile{Message: fsID, Channel: ch, Agent: agent, Host: "remote", PID: 7, Instance: "i1", Time: time.Now().UTC()}
	s.Signature = key.Sign(s.Payload(ch, agent, fsID))
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fsBody(t testing.TB, ch, op, name string, data []byte) []byte {
	t.Helper()
	b, err := json.Marshal(ClaimFSRequest{Channel: ch, Op: op, Name: name, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClaimFS: alice's signed claim, token and seen file are published in
// her folder and read back; a taken name is a conflict; a missing file is
// not-found; a claim generation is replaced.
func TestClaimFS(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	alice := e.keys["alice"]
	dir := e.root.AgentClaims("dev", "alice")
	var rep ClaimFSReply
	if r := handle(t, s, OpClaimFS, "alice", fsBody(t, "dev", ClaimFSRead, fsID+".json", nil), nil); r.OK || r.Code != CodeNotFound {
		t.Fatalf("read of no claim: %+v", r)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{fsID + ".json", claimJSON(t, "dev", "alice", 0, alice)},
		{fsID + ".1.json", claimJSON(t, "dev", "alice", 1, alice)},
		{fsID + ".reply", tokenJSON(t, "dev", "alice", 0, alice)},
		{fsID + ".reply.1", tokenJSON(t, "dev", "alice", 1, alice)},
		{fsID + ".seen", seenJSON(t, "dev", "alice", alice)},
	} {
		if r := handle(t, s, OpClaimFS, "alice", fsBody(t, "dev", ClaimFSPublish, f.name, f.data), nil); !r.OK {
			t.Fatalf("publish %s: %+v", f.name, r)
		}
		if r := handle(t, s, OpClaimFS, "alice", fsBody(t, "dev", ClaimFSPublish, f.name, f.data), nil); r.OK || r.Code != CodeConflict {
			t.Fatalf("publish %s again: %+v, want conflict", f.name, r)
		}
		got, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil || string(got) != string(f.data) {
			t.Fatalf("%s on the files: %q %v", f.name, got, err)
		}
		if r := handle(t, s, OpClaimFS, "alice", fsBody(t, "dev", ClaimFSRead, f.name, nil), &rep); !r.OK || string(rep.Data) != string(f.data) ||
			rep.Size != int64(len(f.data)) || rep.ModTime.IsZero() || !rep.Mode.IsRegular() {
			t.Fatalf("read %s: %+v %+v", f.name, r, rep)
		}
	}
	next := claimJSON(t, "dev", "alice", 1, alice)
	if r := handle(t, s, OpClaimFS, "alice", fsBody(t, "dev", ClaimFSReplace, fsID+".1.json", next), nil); !r.OK {
		t.Fatalf("replace: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, fsID+".1.json")); string(got) != string(next) {
		t.Fatalf("after replace: %s", got)
	}
	if r := handle(t, s, OpClaimFS, "alice", fsBody(t, "dev", ClaimFSLstat, fsID+".2.json", nil), nil); r.Code != CodeNotFound {
		t.Fatalf("lstat of no generation 2: %+v", r)
	}
}

// TestClaimFSRefused: a path outside the acting agent's claims folder,
// another agent's file, unsigned, forged, misplaced or oversized content
// are refused, and nothing is written anywhere.
func TestClaimFSRefused(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	alice, bob := e.keys["alice"], e.keys["bob"]
	good := claimJSON(t, "dev", "alice", 0, alice)
	tampered := []byte(strings.Replace(string(good), `"host":"remote"`, `"host":"elsewhere"`, 1))
	wrongGen := claimJSON(t, "dev", "alice", 1, alice)
	otherCh := claimJSON(t, "ops", "alice", 0, alice)
	var otherMsg claim.Claim
	_ = json.Unmarshal(good, &otherMsg)
	otherMsg.Message = "msg-20261125-010000-carol-00ff"
	otherMsg.Signature = alice.Sign(otherMsg.Payload("dev", "alice", fsID, 0))
	otherMsgData, _ := json.Marshal(otherMsg)
	bobsSeen := seenJSON(t, "dev", "bob", bob)

	for _, c := range []struct {
		name string
		body []byte
		code string
	}{
		{"parent in the name", fsBody(t, "dev", ClaimFSPublish, "../bob/"+fsID+".json", good), CodeInvalid},
		{"separator in the name", fsBody(t, "dev", ClaimFSRead, "x/"+fsID+".json", nil), CodeInvalid},
		{"dot dot", fsBody(t, "dev", ClaimFSRead, "..", nil), CodeInvalid},
		{"another file", fsBody(t, "dev", ClaimFSPublish, fsID+".txt", good), CodeInvalid},
		{"leading zero generation", fsBody(t, "dev", ClaimFSPublish, fsID+".01.json", wrongGen), CodeInvalid},
		{"channel outside", fsBody(t, "../claims/dev", ClaimFSPublish, fsID+".json", good), CodeInvalid},
		{"empty channel", fsBody(t, "", ClaimFSRead, fsID+".json", nil), CodeInvalid},
		{"unsigned claim", fsBody(t, "dev", ClaimFSPublish, fsID+".json", claimJSON(t, "dev", "alice", 0, nil)), CodeForbidden},
		{"claim signed by bob", fsBody(t, "dev", ClaimFSPublish, fsID+".json", claimJSON(t, "dev", "alice", 0, bob)), CodeForbidden},
		{"bob's claim for bob's folder", fsBody(t, "dev", ClaimFSPublish, fsID+".json", claimJSON(t, "dev", "bob", 0, bob)), CodeForbidden},
		{"unknown key", fsBody(t, "dev", ClaimFSPublish, fsID+".json", claimJSON(t, "dev", "alice", 0, e.stray)), CodeForbidden},
		{"tampered claim", fsBody(t, "dev", ClaimFSPublish, fsID+".json", tampered), CodeForbidden},
		{"claim of another generation", fsBody(t, "dev", ClaimFSPublish, fsID+".json", wrongGen), CodeForbidden},
		{"claim of another channel", fsBody(t, "dev", ClaimFSPublish, fsID+".json", otherCh), CodeForbidden},
		{"claim of another message", fsBody(t, "dev", ClaimFSPublish, fsID+".json", otherMsgData), CodeForbidden},
		{"unsigned token", fsBody(t, "dev", ClaimFSPublish, fsID+".reply", tokenJSON(t, "dev", "alice", 0, nil)), CodeForbidden},
		{"token of another number", fsBody(t, "dev", ClaimFSPublish, fsID+".reply.2", tokenJSON(t, "dev", "alice", 1, alice)), CodeForbidden},
		{"unsigned seen", fsBody(t, "dev", ClaimFSPublish, fsID+".seen", seenJSON(t, "dev", "alice", nil)), CodeForbidden},
		{"bob's seen", fsBody(t, "dev", ClaimFSPublish, fsID+".seen", bobsSeen), CodeForbidden},
		{"replace a token", fsBody(t, "dev", ClaimFSReplace, fsID+".reply", tokenJSON(t, "dev", "alice", 0, alice)), CodeForbidden},
		{"claim that is not JSON", fsBody(t, "dev", ClaimFSPublish, fsID+".json", []byte("not json")), CodeInvalid},
		{"too large", fsBody(t, "dev", ClaimFSPublish, fsID+".json", make([]byte, MaxClaimFile+1)), CodeInvalid},
		{"no data", fsBody(t, "dev", ClaimFSPublish, fsID+".json", nil), CodeInvalid},
		{"data on a read", fsBody(t, "dev", ClaimFSRead, fsID+".json", good), CodeInvalid},
		{"unknown op", fsBody(t, "dev", "remove", fsID+".json", nil), CodeInvalid},
		{"negative limit", []byte(`{"channel":"dev","op":"read","name":"` + fsID + `.json","limit":-1}`), CodeInvalid},
		{"unknown field", []byte(`{"channel":"dev","op":"read","name":"` + fsID + `.json","agent":"bob"}`), CodeInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := handle(t, s, OpClaimFS, "alice", c.body, nil); r.OK || r.Code != c.code {
				t.Fatalf("%+v, want %s", r, c.code)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(string(e.root), "claims")); !os.IsNotExist(err) {
		t.Fatalf("something was written: %v", err)
	}
}

// TestClaimFSNoLinks: a link in place of the agent's claims folder, or of
// a file in it, is not followed.
func TestClaimFSNoLinks(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, fsID+".json"), []byte(`{"secret":1}`), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.root.Claims("dev"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, e.root.AgentClaims("dev", "alice")); err != nil {
		t.Fatal(err)
	}
	if r := handle(t, s, OpClaimFS, "alice", fsBody(t, "dev", ClaimFSRead, fsID+".json", nil), nil); r.OK {
		t.Fatalf("read through a linked folder: %+v", r)
	}
	if r := handle(t, s, OpClaimFS, "alice", fsBody(t, "dev", ClaimFSPublish, fsID+".1.json", claimJSON(t, "dev", "alice", 1, e.keys["alice"])), nil); r.OK {
		t.Fatalf("publish through a linked folder: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(outside, fsID+".1.json")); !os.IsNotExist(err) {
		t.Fatalf("written through the link: %v", err)
	}
	if err := os.Remove(e.root.AgentClaims("dev", "alice")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.root.AgentClaims("dev", "alice"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, fsID+".json"), filepath.Join(e.root.AgentClaims("dev", "alice"), fsID+".json")); err != nil {
		t.Fatal(err)
	}
	if r := handle(t, s, OpClaimFS, "alice", fsBody(t, "dev", ClaimFSRead, fsID+".json", nil), nil); r.OK {
		t.Fatalf("read of a linked file: %+v", r)
	}
}

// FuzzClaimFSRequest: any claimfs body is answered with one JSON reply,
// a refusal with a code; nothing unsigned is ever written, and nothing
// outside alice's claims folders.
func FuzzClaimFSRequest(f *testing.F) {
	e := newEnv(f)
	s := e.server(Config{})
	good := claimJSON(f, "dev", "alice", 0, e.keys["alice"])
	for _, b := range [][]byte{
		fsBody(f, "dev", ClaimFSPublish, fsID+".json", good),
		fsBody(f, "dev", ClaimFSRead, fsID+".json", nil),
		fsBody(f, "dev", ClaimFSLstat, fsID+".reply.3", nil),
		fsBody(f, "dev", ClaimFSReplace, fsID+".2.json", []byte("{}")),
		fsBody(f, "dev", ClaimFSPublish, "../x.json", []byte("{}")),
		[]byte(`{"channel":"dev","op":"read","name":"` + fsID + `.json","limit":5}`),
		[]byte(`{}`), []byte(`{"data":"!!"}`), []byte(`{"channel":"dev","op":"publish","name":"a.seen","data":"e30="}`),
	} {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req ClaimFSRequest
		if err := DecodeRequest([]byte(body), &req); err != nil {
			if e, ok := err.(*Error); !ok || e.Code != CodeInvalid {
				t.Fatalf("DecodeRequest(%q): %v, want an invalid *Error", body, err)
			}
		}
		out := s.Handle(RequestSubject(OpClaimFS, "alice"), []byte(body))
		var r ClaimFSReply
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("reply %q: %v", out, err)
		}
		if !r.OK && r.Code == "" {
			t.Fatalf("a refusal without a code: %s", out)
		}
		if r.OK && (req.Op == ClaimFSPublish || req.Op == ClaimFSReplace) && string(req.Data) != string(good) {
			t.Fatalf("wrote %q", req.Data)
		}
		ents, _ := os.ReadDir(string(e.root))
		for _, de := range ents {
			if de.Name() != "claims" {
				t.Fatalf("wrote %s outside the claims", de.Name())
			}
		}
	})
}
