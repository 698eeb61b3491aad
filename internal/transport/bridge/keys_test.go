package bridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
)

// TestKeys: the keyring's files, each checked to name its agent; other
// files are left out.
func TestKeys(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	var rep KeysReply
	if r := handle(t, s, OpKeys, "alice", []byte(`{}`), &rep); !r.OK || len(rep.Keys) != 0 || rep.More {
		t.Fatalf("no keyring: %+v %+v", r, rep)
	}
	ring := keyring.Open(e.root.Keys())
	for a, k := range e.keys {
		if err := ring.Trust(a, k.PublicKey()); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{
		"carol.json": `{"agent":"dave","keys":[]}`,
		"notes.txt":  `hello`,
		"bad.json":   `{`,
	} {
		if err := os.WriteFile(filepath.Join(e.root.Keys(), name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep = KeysReply{}
	if r := handle(t, s, OpKeys, "alice", []byte(`{}`), &rep); !r.OK {
		t.Fatalf("keys: %+v", r)
	}
	if len(rep.Keys) != 2 || rep.More {
		t.Fatalf("keys: %v more %v", keysOf(rep.Keys), rep.More)
	}
	for name, data := range rep.Keys {
		if a, err := KeyFileAgent(name, data); err != nil || e.keys[a] == nil {
			t.Fatalf("%s: %q %v", name, a, err)
		}
	}
	if r := handle(t, s, OpKeys, "alice", []byte(`{"x":1}`), nil); r.Code != CodeInvalid {
		t.Fatalf("unknown field: %+v", r)
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestKills: the kill requests of the acting agent's own jobs only.
func TestKills(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	job := jobs.NewID()
	if err := os.MkdirAll(e.root.Jobs("alice"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := jobs.RequestKill(e.root, "alice", job, "bob", e.keys["bob"]); err != nil {
		t.Fatal(err)
	}
	ask := func(agent string, ids ...string) (KillsReply, Reply) {
		b, _ := json.Marshal(KillsRequest{Jobs: ids})
		var rep KillsReply
		r := handle(t, s, OpKills, agent, b, &rep)
		return rep, r
	}
	rep, r := ask("alice", job, jobs.NewID())
	if !r.OK || len(rep.Kills) != 1 {
		t.Fatalf("alice: %+v %v", r, rep.Kills)
	}
	var k jobs.Kill
	if err := json.Unmarshal(rep.Kills[job], &k); err != nil || k.By != "bob" {
		t.Fatalf("kill: %s %v", rep.Kills[job], err)
	}
	if v := k.Verify(e.v, "alice", job); v != signing.Verified {
		t.Fatalf("the kill as returned: %v", v)
	}
	if rep, r := ask("bob", job); !r.OK || len(rep.Kills) != 0 {
		t.Fatalf("bob sees alice's kill: %+v %v", r, rep.Kills)
	}
	if _, r := ask("alice", "../x"); r.Code != CodeInvalid {
		t.Fatalf("bad id: %+v", r)
	}
	many := make([]string, MaxKillJobs+1)
	for i := range many {
		many[i] = job
	}
	if _, r := ask("alice", many...); r.Code != CodeInvalid {
		t.Fatalf("too many: %+v", r)
	}
}

// FuzzKeyFileAgent: never panics; an accepted file names its agent.
func FuzzKeyFileAgent(f *testing.F) {
	f.Add("alice.json", []byte(`{"agent":"alice","keys":[]}`))
	f.Add("../x.json", []byte(`{"agent":"../x"}`))
	f.Add("a.json", []byte(`[1]`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		a, err := KeyFileAgent(name, data)
		if err == nil && a+".json" != name {
			t.Fatalf("%q accepted as %q", name, a)
		}
	})
}

// TestKeysFromTheCheckedFolder: with a checked keyring, the keys op hands
// remote hosts the folder that was checked, never one put in its place
// later, and leaves out a file that no longer passes the check.
func TestKeysFromTheCheckedFolder(t *testing.T) {
	e := newEnv(t)
	ring := keyring.Open(e.root.Keys())
	if err := ring.Trust("alice", e.keys["alice"].PublicKey()); err != nil {
		t.Fatal(err)
	}
	if err := ring.Trust("bob", e.keys["bob"].PublicKey()); err != nil {
		t.Fatal(err)
	}
	if err := ring.Check(os.Geteuid(), true); err != nil {
		t.Fatal(err)
	}
	s := e.server(Config{Keyring: ring})
	if err := os.Rename(e.root.Keys(), e.root.Keys()+".real"); err != nil {
		t.Fatal(err)
	}
	planted := keyring.Open(e.root.Keys())
	evil, err := signing.NewKey(filepath.Join(t.TempDir(), "evil.key"), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := planted.Trust("alice", evil.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(e.root.Keys()+".real", "bob.json"), 0o664); err != nil {
		t.Fatal(err)
	}
	var rep KeysReply
	if r := handle(t, s, OpKeys, "alice", []byte(`{}`), &rep); !r.OK {
		t.Fatalf("keys: %+v", r)
	}
	if len(rep.Keys) != 1 || !json.Valid(rep.Keys["alice.json"]) {
		t.Fatalf("keys: %v; want alice.json alone (bob.json is group-writable now)", keysOf(rep.Keys))
	}
	var f struct {
		Keys []struct {
			Key string `json:"key"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(rep.Keys["alice.json"], &f); err != nil || len(f.Keys) != 1 || f.Keys[0].Key != e.keys["alice"].PublicKey() {
		t.Fatalf("alice.json = %s, %v: want the checked folder's key", rep.Keys["alice.json"], err)
	}
}
