package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// TestDelegatedAgentHasItsOwnKey: a delegated agent signs with a key made
// for it, never with its delegator's. On a tree made the multi-account
// way, Agent's delegator "agent" has a key the admin trusts, in its
// COLLAB_KEY too (as a model run of a keyed watcher has it). The
// delegated watcher's environment, and its model run's, name the agent's
// own key file (in the delegator's key folder, 0600); what the agent
// posts (its watcher's reply, and a collab send from its model run) is
// signed with that key: not verified until the admin trusts the key
// delegate printed, verified as the agent after, and never as the
// delegator. rm removes the key.
func TestDelegatedAgentHasItsOwnKey(t *testing.T) {
	g := newRecordsTree(t)
	root := tree.Root(g.root)
	repo := g.agentRepo(t)

	var nk struct{ Key, File string }
	out := g.s.Agent.Run(t, g.env, g.exe, "key", "new", "--agent", "agent", "--json")
	if err := json.Unmarshal([]byte(out), &nk); err != nil {
		t.Fatalf("key new: %v\n%s", err, out)
	}
	if _, errOut, code := g.collab(g.s.Admin, "key", "trust", "agent", nk.Key); code != 0 {
		t.Fatalf("key trust: exit %d\n%s", code, errOut)
	}

	// The delegated agent's model CLI posts with collab send, as a model
	// run does, and answers with its COLLAB_KEY.
	cli := filepath.Join(g.s.Dir, "key-cli")
	script := "#!/bin/sh\ncat >/dev/null\n" +
		"COLLAB_TEST_AS=collab '" + g.exe + "' send --channel \"$COLLAB_CHANNEL\" --to \"$COLLAB_FROM\" 'from the run' >&2 || exit 1\n" +
		"echo \"key=$COLLAB_KEY\"\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := g.s.Agent.Try(append(g.env, envKey+"="+nk.File), g.exe, "delegate", "--root", g.root,
		"--agent", "agent", "--repo", repo, "--worktrees", filepath.Join(g.s.Agent.Home, "wts"),
		"--cli", "command", "--cmd", cli, "--poll", "100ms", "--heartbeat", "1s", "--json", "work")
	if err != nil {
		t.Fatalf("delegate: %v\n%s", err, errOut)
	}
	var s struct {
		sessions.Session
		Trust string `json:"trust"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.PID == 0 {
		t.Fatalf("delegate --json: %v\n%s", err, out)
	}
	t.Cleanup(func() { proc.EndGroup(s.PID, 0) })

	own := filepath.Join(g.s.Agent.Home, ".config", "collab", "keys", s.Agent+".key")
	if s.Key != own || s.PublicKey == "" || s.PublicKey == nk.Key {
		t.Fatalf("session key %q (public %q), want %s, not the delegator's %s", s.Key, s.PublicKey, own, nk.Key)
	}
	if fi, err := os.Stat(own); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the agent's key file: %v, %v", fi, err)
	}
	if want := "collab key trust " + s.Agent + " " + s.PublicKey; s.Trust != want {
		t.Errorf("delegate printed trust %q, want %q", s.Trust, want)
	}

	// The watcher's environment: its own key, the delegator's nowhere.
	environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.PID), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	key := ""
	for kv := range bytes.SplitSeq(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(envKey+"=")); ok {
			key = string(v) // the last setting wins
		}
		if bytes.Contains(kv, []byte(nk.File)) {
			t.Errorf("the delegated watcher's environment has the delegator's key: %s", kv)
		}
	}
	if key != own {
		t.Errorf("the delegated watcher's %s = %q, want %s", envKey, key, own)
	}

	// What the agent posts, with the verdicts collab read gives.
	verdicts := func() map[string]channel.Message {
		t.Helper()
		out, errOut, code := g.collab(g.s.Admin, "read", "--channel", s.Channel, "--json")
		if code != 0 {
			t.Fatalf("read: exit %d\n%s", code, errOut)
		}
		got := map[string]channel.Message{}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			m, err := channel.Decode(sc.Bytes(), "", s.Channel)
			if err != nil {
				t.Fatalf("read --json: %v\n%s", err, sc.Bytes())
			}
			if m.From == s.Agent {
				got[m.Content.Text] = m
			}
		}
		return got
	}
	var mine map[string]channel.Message
	waitFor(t, func() bool {
		mine = verdicts()
		return len(mine) == 2
	})
	if _, ok := mine["key="+own]; !ok {
		t.Errorf("the model run's %s is not %s: the agent posted %v", envKey, own, keys(mine))
	}
	for text, m := range mine {
		if v := m.Extra["verdict"]; string(v) == `"verified"` {
			t.Errorf("%q verifies before the admin trusted the agent's key", text)
		}
		if m.Signature == nil || m.Signature.Key != s.PublicKey {
			t.Errorf("%q is not signed with the agent's key: %+v", text, m.Signature)
		}
	}
	if _, errOut, code := g.collab(g.s.Admin, "key", "trust", s.Agent, s.PublicKey); code != 0 {
		t.Fatalf("key trust: exit %d\n%s", code, errOut)
	}
	mine = verdicts()
	ring := keyring.Open(root.Keys())
	if err := ring.Check(g.s.Admin.UID, false); err != nil {
		t.Fatal(err)
	}
	for text, m := range mine {
		if v := m.Extra["verdict"]; string(v) != `"verified"` {
			t.Errorf("%q from %s: %s, want verified", text, s.Agent, v)
		}
		as := m
		as.From = "agent"
		if got := as.Verify(signing.NewVerifier(ring), s.Channel); got == signing.Verified {
			t.Errorf("%q verifies as the delegator", text)
		}
	}

	if _, errOut, code := g.collab(g.s.Agent, "delegate", "rm", "--force", s.ID); code != 0 {
		t.Fatalf("rm: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("the agent's key after rm: %v", err)
	}
}

func keys(m map[string]channel.Message) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestModelRunKeyIsItsAgentsOwn: a watcher's model run gets as COLLAB_KEY
// the key its own agent signs with, or none; never a key the watcher's
// process inherited: a person's under collab run (whose agents sign with
// their own default keys), or one --key overrides.
func TestModelRunKeyIsItsAgentsOwn(t *testing.T) {
	cli := filepath.Join(t.TempDir(), "cli")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\ncat >/dev/null\necho \"key=$COLLAB_KEY\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := t.TempDir()
	newKey := func(agent string) string {
		t.Helper()
		file := filepath.Join(cfg, agent+".key")
		if _, err := signing.NewKey(file, agent, false); err != nil {
			t.Fatal(err)
		}
		return file
	}
	person := newKey("human")
	t.Setenv(envKey, person) // the environment the watchers start in
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	answer := func(t *testing.T, root, ch, from string) string {
		t.Helper()
		var text string
		waitFor(t, func() bool {
			msgs, _, _ := channel.ReadAll(tree.Root(root), ch, channel.ReaderOptions{})
			for _, m := range msgs {
				if m.From == from && strings.HasPrefix(m.Content.Text, "key=") {
					text = strings.TrimSpace(m.Content.Text)
					return true
				}
			}
			return false
		})
		return text
	}

	t.Run("watch --key", func(t *testing.T) {
		root := newTree(t)
		own := newKey("codex")
		startWatch(t, os.Args[0], root, "codex", nil, "--channel", "dev", "--cli", "command", "--cmd", cli, "--key", own)
		send(t, root, "dev", "human", "codex", "which key?")
		if got, want := answer(t, root, "dev", "codex"), "key="+own; got != want {
			t.Errorf("the run's %s: %q, want %q", envKey, got, want)
		}
	})
	t.Run("collab run", func(t *testing.T) {
		root, env := newWorkflowRoot(t)
		p := writeWorkflow(t, "name: keys\nagents:\n  a:\n    cli: command\n    cmd: "+strconv.Quote(cli)+"\nkickoff: \"@a which key?\"\n")
		r := runCollabAs(t, "human", env, "", runArgs("--instance", "k1", "--timeout", "60s", p)...)
		if r.code != 0 {
			t.Fatalf("run: %+v", r)
		}
		// a--k1 has no key: its run has none either, not the person's.
		if got := answer(t, root, "keys--k1", "a--k1"); got != "key=" {
			t.Errorf("the run's %s: %q, want none", envKey, got)
		}
	})
}
