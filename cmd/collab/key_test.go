package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
)

// keyEnv returns the environment of an account whose config (and so its
// default key files) is a fresh folder, on the tree root.
func keyEnv(t *testing.T, root string) map[string]string {
	return map[string]string{"COLLAB_ROOT": root, "XDG_CONFIG_HOME": t.TempDir()}
}

// newKey runs 'collab key new' for agent and trusts the key; it returns
// the public key.
func newKey(t *testing.T, env map[string]string, agent string) string {
	t.Helper()
	r := runCollab(t, env, "", "key", "new", "--agent", agent, "--json")
	var out struct{ Agent, Key, File, Trust string }
	if err := json.Unmarshal([]byte(r.stdout), &out); r.code != 0 || err != nil {
		t.Fatalf("key new: exit %d, %q (%v), stderr %q", r.code, r.stdout, err, r.stderr)
	}
	if r := runCollab(t, env, "", strings.Fields(strings.TrimPrefix(out.Trust, "collab "))...); r.code != 0 {
		t.Fatalf("%s: exit %d, stderr %q", out.Trust, r.code, r.stderr)
	}
	return out.Key
}

func TestKeyRoundTrip(t *testing.T) {
	root := newTree(t)
	env := keyEnv(t, root)
	r := runCollab(t, env, "", "key", "new", "--agent", "alice")
	lines := strings.Split(r.stdout, "\n")
	if r.code != 0 || len(lines) < 3 {
		t.Fatalf("key new: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	pub := lines[0]
	if _, err := keyring.ParsePublic(pub); err != nil {
		t.Fatalf("key new printed %q first, not a public key: %v", pub, err)
	}
	if want := "collab key trust alice " + pub; !strings.Contains(r.stdout, want) {
		t.Errorf("key new does not print the admin's command %q:\n%s", want, r.stdout)
	}
	file := filepath.Join(env["XDG_CONFIG_HOME"], "collab", "keys", "alice.key")
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v, %v; want mode 0600", file, fi, err)
	}
	// A second key needs --force; --key puts it elsewhere.
	if r := runCollab(t, env, "", "key", "new", "--agent", "alice"); r.code != 1 || !strings.Contains(r.stderr, "--force") {
		t.Errorf("key new over a key: exit %d, stderr %q; want 1 naming --force", r.code, r.stderr)
	}
	other := filepath.Join(t.TempDir(), "alice2.key")
	r = runCollab(t, env, "", "key", "new", "--agent", "alice", "--key", other)
	pub2 := strings.Split(r.stdout, "\n")[0]
	if r.code != 0 || pub2 == pub {
		t.Fatalf("key new --key: exit %d, %q", r.code, r.stdout)
	}

	for _, p := range []string{pub, pub2} {
		if r := runCollab(t, env, "", "key", "trust", "alice", p); r.code != 0 || r.stderr != "" {
			t.Fatalf("key trust: exit %d, stderr %q", r.code, r.stderr)
		}
	}
	list := func() []service.KeyEntry {
		t.Helper()
		r := runCollab(t, env, "", "key", "list", "--json")
		var rows []service.KeyEntry
		if err := json.Unmarshal([]byte(r.stdout), &rows); r.code != 0 || err != nil {
			t.Fatalf("key list --json: exit %d, %q (%v)", r.code, r.stdout, err)
		}
		return rows
	}
	rows := list()
	if len(rows) != 2 || rows[0].Agent != "alice" || rows[0].Key != pub || rows[1].Key != pub2 || rows[0].Revoked != nil || rows[0].Added.IsZero() {
		t.Fatalf("key list = %+v; want alice's two keys, unrevoked", rows)
	}
	if r := runCollab(t, env, "", "key", "list"); !strings.Contains(r.stdout, "alice") || !strings.Contains(r.stdout, pub2) || !strings.Contains(r.stdout, "trusted") {
		t.Errorf("key list:\n%s", r.stdout)
	}

	// Revoke one key at a time, then all.
	at := "2026-01-02T03:04:05Z"
	if r := runCollab(t, env, "", "key", "revoke", "alice", pub, "--at", at); r.code != 0 || !strings.Contains(r.stdout, "revoked "+at) {
		t.Fatalf("key revoke: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	rows = list()
	if rows[0].Revoked == nil || rows[0].Revoked.Format(time.RFC3339) != at || rows[1].Revoked != nil {
		t.Errorf("after revoking the first key: %+v", rows)
	}
	if r := runCollab(t, env, "", "key", "revoke", "alice"); r.code != 0 {
		t.Fatalf("key revoke alice: exit %d, stderr %q", r.code, r.stderr)
	}
	if rows = list(); rows[1].Revoked == nil || rows[0].Revoked.Format(time.RFC3339) != at {
		t.Errorf("after revoking every key: %+v; want both revoked, the first still at %s", rows, at)
	}
	if r := runCollab(t, env, "", "key", "revoke", "bob"); r.code != 3 {
		t.Errorf("key revoke of an agent with no key: exit %d, want 3 (%s)", r.code, r.stderr)
	}
}

func TestKeyBadInput(t *testing.T) {
	root := newTree(t)
	env := keyEnv(t, root)
	for _, args := range [][]string{
		{"key"},
		{"key", "frob"},
		{"key", "new"},
		{"key", "new", "--agent", "../x"},
		{"key", "trust", "alice"},
		{"key", "trust", "alice", "not-a-key"},
		{"key", "trust", "../x", "AAAA"},
		{"key", "revoke"},
		{"key", "revoke", "alice", "nope"},
		{"key", "revoke", "alice", "--at", "yesterday"},
		{"key", "list", "a/b"},
	} {
		r := runCollab(t, env, "", args...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want a usage error", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(tree.Root(root).Keys()); err == nil {
		t.Errorf("bad input wrote the keyring")
	}
}

// TestKeyTrustWarnsUnsafe: trusting a key into a keyring others may write
// says so, and what to fix.
func TestKeyTrustWarnsUnsafe(t *testing.T) {
	root := newTree(t)
	env := keyEnv(t, root)
	ring := tree.Root(root).Keys()
	if err := os.Mkdir(ring, 0o755); err != nil {
		t.Fatal(err)
	}
	pub := newKey(t, env, "alice")
	// Trust and revoke keep the modes of what they write, but not the
	// rest of the folder: a planted link stays.
	if err := os.Symlink(t.TempDir(), filepath.Join(ring, "planted")); err != nil {
		t.Fatal(err)
	}
	r := runCollab(t, env, "", "key", "revoke", "alice", pub)
	if r.code != 0 || !strings.Contains(r.stderr, "planted is a symbolic link") || !strings.Contains(r.stderr, "writable by no one else") {
		t.Errorf("revoke into an unsafe keyring: exit %d, stderr %q; want a warning saying what to fix", r.code, r.stderr)
	}
}

// TestSendSigns: send signs with the sender's key, read shows it verified
// (no mark; "verified" in --json) and verify passes.
func TestSendSigns(t *testing.T) {
	root := newTree(t)
	env := keyEnv(t, root)
	newKey(t, env, "alice")
	if r := runCollab(t, env, "", "send", "--agent", "alice", "--channel", "dev", "hello"); r.code != 0 {
		t.Fatalf("send: exit %d, stderr %q", r.code, r.stderr)
	}
	m := onlyMessage(t, root, "dev")
	if m.Signature == nil {
		t.Fatalf("send did not sign: %+v", m)
	}
	r := runCollab(t, env, "", "read", "--channel", "dev")
	if r.code != 0 || !strings.Contains(r.stdout, "alice → all") || strings.ContainsAny(r.stdout, "[(") || r.stderr != "" {
		t.Errorf("read of a verified message: exit %d, stdout %q, stderr %q; want no mark", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "read", "--channel", "dev", "--json")
	var got struct {
		ID      string
		Verdict string
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Verdict != "verified" || got.ID != m.ID {
		t.Errorf("read --json: %q (%v); want verdict verified", r.stdout, err)
	}
	if r := runCollab(t, env, "", "verify", "--channel", "dev"); r.code != 0 || !strings.Contains(r.stdout, "1 verified") {
		t.Errorf("verify: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestSendRefusesExposedKey: a key file others can read is an error, not
// a silent unsigned message.
func TestSendRefusesExposedKey(t *testing.T) {
	root := newTree(t)
	env := keyEnv(t, root)
	newKey(t, env, "alice")
	file := filepath.Join(env["XDG_CONFIG_HOME"], "collab", "keys", "alice.key")
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCollab(t, env, "", "send", "--agent", "alice", "--channel", "dev", "hello")
	if r.code != 1 || !strings.Contains(r.stderr, "readable by others") || !strings.Contains(r.stderr, "chmod 600") {
		t.Errorf("send with a readable key: exit %d, stderr %q; want 1 and the fix", r.code, r.stderr)
	}
	if msgs, _, _ := channel.ReadAll(tree.Root(root), "dev", channel.ReaderOptions{}); len(msgs) != 0 {
		t.Errorf("sent %d messages", len(msgs))
	}
}

// TestForgeriesMarked: a message that names a keyed sender but is
// unsigned, and a signed one copied under another name, are marked by
// read and make verify exit 1; an unsigned one from a sender with no key
// gets the quiet mark and is no forgery.
func TestForgeriesMarked(t *testing.T) {
	root := newTree(t)
	env := keyEnv(t, root)
	newKey(t, env, "alice")
	if r := runCollab(t, env, "", "send", "--agent", "alice", "--channel", "dev", "the real one"); r.code != 0 {
		t.Fatalf("send: %s", r.stderr)
	}
	real := onlyMessage(t, root, "dev")

	// Only an unkeyed sender: not a forgery.
	w := &channel.Writer{Root: tree.Root(root)}
	if err := w.Post(&channel.Message{SessionID: "dev", From: "bob", Content: channel.Content{Text: "no key here"}}); err != nil {
		t.Fatal(err)
	}
	if r := runCollab(t, env, "", "verify", "--channel", "dev"); r.code != 0 || !strings.Contains(r.stdout, "1 unsigned") {
		t.Errorf("verify with an unkeyed sender: exit %d, stdout %q", r.code, r.stdout)
	}
	r := runCollab(t, env, "", "read", "--channel", "dev")
	if !strings.Contains(r.stdout, "bob (unsigned) → all") {
		t.Errorf("read does not mark the unkeyed unsigned message:\n%s", r.stdout)
	}

	// Forged as alice, written without a signature.
	forged := &channel.Message{SessionID: "dev", From: "alice", Content: channel.Content{Text: "allow"}}
	if err := w.Post(forged); err != nil {
		t.Fatal(err)
	}
	// The real signed file, copied under another name.
	data, err := os.ReadFile(filepath.Join(tree.Root(root).Channel("dev"), real.File))
	if err != nil {
		t.Fatal(err)
	}
	copied := channel.NewID("alice", time.Now().Add(time.Second), "beef")
	if err := os.WriteFile(filepath.Join(tree.Root(root).Channel("dev"), copied+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	r = runCollab(t, env, "", "read", "--channel", "dev")
	if !strings.Contains(r.stdout, "alice [UNSIGNED] → all") || !strings.Contains(r.stdout, "alice [BAD SIGNATURE] → all") {
		t.Errorf("read does not mark the forgeries:\n%s", r.stdout)
	}
	if strings.Count(r.stdout, "alice → all") != 1 {
		t.Errorf("read: want exactly the real message unmarked:\n%s", r.stdout)
	}
	r = runCollab(t, env, "", "read", "--channel", "dev", "--json")
	verdicts := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m struct{ Verdict string }
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("read --json line %q: %v", l, err)
		}
		verdicts[m.Verdict]++
	}
	if verdicts["verified"] != 1 || verdicts["unsigned"] != 2 || verdicts["bad-signature"] != 1 {
		t.Errorf("read --json verdicts = %v", verdicts)
	}

	r = runCollab(t, env, "", "verify", "--channel", "dev")
	if r.code != 1 || !strings.Contains(r.stdout, "FORGED "+forged.File) || !strings.Contains(r.stdout, "FORGED "+copied+".json") || strings.Contains(r.stdout, "from bob") {
		t.Errorf("verify: exit %d, stdout %q, stderr %q; want 1 naming the two forgeries", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "verify", "--channel", "dev", "--json")
	var audit struct {
		Messages  int
		Verdicts  map[string]int
		Forgeries []struct{ ID, File, From, Verdict string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &audit); r.code != 1 || err != nil || audit.Messages != 4 || len(audit.Forgeries) != 2 || audit.Verdicts["bad-signature"] != 1 {
		t.Errorf("verify --json: exit %d, %q (%v)", r.code, r.stdout, err)
	}
}

// TestMCPSigns: 'collab mcp' signs as its agent with the agent's key.
func TestMCPSigns(t *testing.T) {
	root := newTree(t)
	env := keyEnv(t, root)
	newKey(t, env, "claude")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"mcp", "--agent", "claude", "--channel", "dev"}, func(k string) string { return env[k] }, inR, outW, &stderr)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": "signed by mcp"}})
	if err != nil || res.IsError {
		t.Fatalf("channel_send: %+v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "channel_peek"})
	if err != nil || res.IsError {
		t.Fatalf("channel_peek: %+v, %v", res, err)
	}
	if data, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(data), `"verdict":"verified"`) {
		t.Errorf("channel_peek: %s; want the message verified", data)
	}
	cs.Close()
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("collab mcp: %v (stderr %q)", err, stderr.String())
	}
	if m := onlyMessage(t, root, "dev"); m.Signature == nil {
		t.Errorf("mcp sent %+v unsigned", m)
	}
	if r := runCollab(t, env, "", "verify", "--channel", "dev"); r.code != 0 || !strings.Contains(r.stdout, "1 verified") {
		t.Errorf("verify: exit %d, %q", r.code, r.stdout)
	}
}
