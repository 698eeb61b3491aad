package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// trustKey makes a key for agent, trusts it in the tree's keyring, and
// returns its signer.
func trustKey(t testing.TB, root tree.Root, agent string) *signing.Signer {
	t.Helper()
	s, _ := trustKeyFile(t, root, agent)
	return s
}

// trustKeyFile is trustKey that also returns the private key's file.
func trustKeyFile(t testing.TB, root tree.Root, agent string) (*signing.Signer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), agent+".key")
	s, err := signing.NewKey(path, agent, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := keyring.Open(root.Keys()).Trust(agent, s.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// TestWhoForgedPresence: a heartbeat in the name of an agent with keys
// that does not verify is marked and fails --check; a signed one passes;
// an unsigned one of an agent without keys is not marked.
func TestWhoForgedPresence(t *testing.T) {
	root := tree.Root(newTree(t))
	env := map[string]string{"COLLAB_ROOT": string(root)}
	alice := trustKey(t, root, "alice")
	trustKey(t, root, "bob")
	trustKey(t, root, "erin")
	now := presence.FormatTime(time.Now())
	beat := func(agent string) presence.Status {
		return presence.Status{AgentID: agent, Timestamp: now, State: "AWAKE", Substate: "IDLE", Channel: "general", Host: "other-host"}
	}
	signed := beat("alice")
	signed.Sign(alice)
	copied := signed // alice's signed heartbeat, copied into carol's file
	copied.AgentID = "carol"
	copiedKeyed := signed // and into erin's, who has keys
	copiedKeyed.AgentID = "erin"
	for _, s := range []presence.Status{signed, beat("bob"), beat("dave"), copied, copiedKeyed} {
		if err := presence.Write(root, s); err != nil {
			t.Fatal(err)
		}
	}
	for agent, code := range map[string]int{"alice": 0, "bob": 1, "dave": 0, "erin": 1} {
		if r := runCollab(t, env, "", "who", "--check", agent); r.code != code {
			t.Errorf("who --check %s: exit %d, want %d (stderr %q)", agent, r.code, code, r.stderr)
		}
	}
	r := runCollab(t, env, "", "who")
	if r.code != 0 {
		t.Fatalf("who: exit %d, stderr %q", r.code, r.stderr)
	}
	header, rows, _ := tableRows(t, r.stdout)
	if header[len(header)-1] != "SIGNATURE" {
		t.Fatalf("header %v has no SIGNATURE column", header)
	}
	for agent, mark := range map[string]string{"alice": "-", "bob": "unsigned", "dave": "-", "carol": "unknown-key", "erin": "unknown-key"} {
		if got := rows[agent][len(header)-1]; got != mark {
			t.Errorf("%s marked %q, want %q", agent, got, mark)
		}
	}
	r = runCollab(t, env, "", "who", "--json")
	var got []struct {
		Agent   string `json:"agent"`
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	want := map[string]string{"alice": "verified", "bob": "unsigned", "carol": "unknown-key", "dave": "unsigned", "erin": "unknown-key"}
	for _, e := range got {
		if e.Verdict != want[e.Agent] {
			t.Errorf("%s: verdict %q, want %q", e.Agent, e.Verdict, want[e.Agent])
		}
	}
}

// BenchmarkWho1000Signed is BenchmarkWho1000 with every heartbeat signed
// and every agent's key in the keyring: the cost of checking them.
func BenchmarkWho1000Signed(b *testing.B) {
	root := tree.Root(newTree(b))
	now := presence.FormatTime(time.Now())
	for i := range 1000 {
		agent := fmt.Sprintf("agent-%04d", i)
		s := presence.Status{AgentID: agent, Timestamp: now, State: "AWAKE", Substate: "IDLE",
			WatcherPID: 1000 + i, Channel: "general", Host: fmt.Sprintf("vm-%d", i%8)}
		s.Sign(trustKey(b, root, agent))
		if err := presence.Write(root, s); err != nil {
			b.Fatal(err)
		}
	}
	env := map[string]string{"COLLAB_ROOT": string(root)}
	for b.Loop() {
		var out, errb strings.Builder
		err := run(b.Context(), []string{"who"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
		if err != nil || errb.Len() > 0 || strings.Contains(out.String(), "SIGNATURE") {
			b.Fatalf("who: %v %s", err, errb.String())
		}
	}
}
