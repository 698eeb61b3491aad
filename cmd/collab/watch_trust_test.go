package main

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestWatchTrustFlags: a keyring this account can write (the test's own,
// as the tree's owner: so it is as root too) is refused at start under
// known and signed (exit 2, naming the folder and the fix), accepted with
// --allow-writable-keyring, warned about under any and when it is empty;
// a bad --trust or COLLAB_TRUST and a key file others can read are usage
// errors.
func TestWatchTrustFlags(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := keyring.FormatPublic(priv.Public().(ed25519.PublicKey))
	base := []string{"watch", "--agent", "codex", "--channel", "dev", "--cli", "command", "--cmd", os.Args[0]}
	tests := []struct {
		name    string
		empty   bool // the keyring holds no key
		exposed bool // --key names a file mode 0644
		env     map[string]string
		args    []string
		code    int
		want    []string // in stderr
	}{
		{"known refuses", false, false, nil, nil, 2, []string{"refusing the keyring", "keys", "uid", "mode", "--allow-writable-keyring"}},
		{"signed refuses", false, false, nil, []string{"--trust", "signed"}, 2, []string{"refusing the keyring", "--trust signed"}},
		{"env signed refuses", false, false, map[string]string{"COLLAB_TRUST": "signed"}, nil, 2, []string{"refusing the keyring"}},
		{"allowed", false, false, nil, []string{"--allow-writable-keyring"}, 0, nil},
		{"any warns", false, false, nil, []string{"--trust", "any"}, 0, []string{"warning", "allow-writable-keyring"}},
		{"empty warns", true, false, nil, nil, 0, []string{"warning"}},
		{"bad trust", false, false, nil, []string{"--trust", "some"}, 2, []string{"--trust", "any, known or signed"}},
		{"bad env trust", false, false, map[string]string{"COLLAB_TRUST": "all"}, []string{"--allow-writable-keyring"}, 2, []string{"--trust"}},
		{"exposed key", false, true, nil, []string{"--allow-writable-keyring"}, 2, []string{"readable by others", "chmod 600"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			ring := keyring.Open(tree.Root(root).Keys())
			if err := ring.Create(); err != nil {
				t.Fatal(err)
			}
			if !tt.empty {
				if err := ring.Trust("alice", pub); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{"COLLAB_ROOT": root, "XDG_CONFIG_HOME": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			args := append(append([]string(nil), base...), tt.args...)
			if tt.exposed {
				key := filepath.Join(t.TempDir(), "codex.key")
				if _, err := signing.NewKey(key, "codex", false); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(key, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--key", key)
			}
			// Accepted, the watcher would run: the deadline ends it.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			r := runCollabCtx(t, ctx, env, "", args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, tt.code, r.stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr %q does not say %q", r.stderr, want)
				}
			}
			if tt.code == 0 && strings.Contains(r.stderr, "refusing") {
				t.Errorf("stderr %q refuses the keyring", r.stderr)
			}
		})
	}
}

// TestWatchSignsWithKey: a watcher whose agent has a key (at the default
// path) signs its replies; they verify against the keyring.
func TestWatchSignsWithKey(t *testing.T) {
	root := newTree(t)
	cfgHome := t.TempDir()
	s, err := signing.NewKey(signing.DefaultKeyPath("codex", func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return cfgHome
		}
		return ""
	}), "codex", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(tree.Root(root).Keys())
	if err := ring.Trust("codex", s.PublicKey()); err != nil {
		t.Fatal(err)
	}
	w := startWatcher(t, root, "codex", "dev", []string{"XDG_CONFIG_HOME=" + cfgHome}, "--allow-writable-keyring")
	defer w.stop(t, os.Interrupt)
	id := send(t, root, "dev", "alice", "codex", "hello")
	v := signing.NewVerifier(ring)
	deadline := time.Now().Add(20 * time.Second)
	for {
		msgs, _, err := channel.ReadAll(tree.Root(root), "dev", channel.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Metadata.InReplyTo == id {
				if got := m.Verify(v, "dev"); got != signing.Verified {
					t.Fatalf("the reply's verdict is %v, want verified", got)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no reply")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchRefusesKeyedAgentWithoutKey: an agent with keys in the keyring
// run without its private key would write unsigned claims and heartbeats
// in its own name, which every other watcher takes for forgeries.
func TestWatchRefusesKeyedAgentWithoutKey(t *testing.T) {
	root := newTree(t)
	ring := keyring.Open(tree.Root(root).Keys())
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ring.Trust("codex", keyring.FormatPublic(priv.Public().(ed25519.PublicKey))); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COLLAB_ROOT": root, "XDG_CONFIG_HOME": t.TempDir()}
	args := []string{"watch", "--agent", "codex", "--channel", "dev", "--cli", "command", "--cmd", os.Args[0], "--allow-writable-keyring"}
	r := runCollabCtx(t, context.Background(), env, "", args...)
	if r.code != 2 || !strings.Contains(r.stderr, "has keys in the keyring") || !strings.Contains(r.stderr, "--trust any") {
		t.Errorf("exit %d, stderr %q; want 2 and the reason", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if r := runCollabCtx(t, ctx, env, "", append(args, "--trust", "any")...); r.code != 0 {
		t.Errorf("under --trust any: exit %d, stderr %q", r.code, r.stderr)
	}
}
