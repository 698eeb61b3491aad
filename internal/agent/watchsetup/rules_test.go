package watchsetup

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestParseReplay: --replay-since is a duration ago or a message id;
// anything else is Invalid.
func TestParseReplay(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r, err := parseReplay("30m", now)
	if err != nil || !r.From.Equal(now.Add(-30*time.Minute)) || r.After != "" {
		t.Errorf("30m: %+v, %v", r, err)
	}
	id := "msg-20260101-000100-bob-0002"
	if r, err := parseReplay(id, now); err != nil || r.After != id || r.From.IsZero() {
		t.Errorf("%s: %+v, %v", id, r, err)
	}
	if _, err := parseReplay("yesterday", now); !errkind.Is(err, errkind.Invalid) || !strings.Contains(err.Error(), "--replay-since") {
		t.Errorf("yesterday: %v; want Invalid naming --replay-since", err)
	}
}

// TestCheckRunnable: a workdir that is not a folder and a program not
// found are refused at start (Invalid); a relative program with a slash
// is looked for in the workdir.
func TestCheckRunnable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, program, workdir string
		ok                     bool
	}{
		{"found", "sh", "", true},
		{"in workdir", "./f", dir, true},
		{"missing", "no-such-program-xyz", "", false},
		{"workdir a file", "sh", file, false},
		{"workdir missing", "sh", filepath.Join(dir, "none"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkRunnable(c.program, c.workdir)
			if c.ok != (err == nil) || (err != nil && !errkind.Is(err, errkind.Invalid)) {
				t.Errorf("checkRunnable(%q, %q) = %v", c.program, c.workdir, err)
			}
		})
	}
}

// TestRoleText: --role is a file when one exists by that name, else the
// text itself.
func TestRoleText(t *testing.T) {
	p := filepath.Join(t.TempDir(), "role.md")
	if err := os.WriteFile(p, []byte("from the file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{p: "from the file", "be terse": "be terse", "two\nlines": "two\nlines", "": ""} {
		if got, err := roleText(in); err != nil || got != want {
			t.Errorf("roleText(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestNewRunner: --cmd names the program of a dedicated CLI, and
// runnerProgram finds it; command needs words.
func TestNewRunner(t *testing.T) {
	getenv := func(string) string { return "" }
	r, err := newRunner("claude", "/opt/claude --x", "m", []string{"--y"}, nil, getenv)
	c, ok := r.(*claude.Adapter)
	if err != nil || !ok || c.Bin != "/opt/claude" || strings.Join(c.Args, " ") != "--x --y" || runnerProgram(r) != "/opt/claude" {
		t.Errorf("claude: %+v, %v", r, err)
	}
	if r, _ := newRunner("codex", "", "", nil, nil, getenv); runnerProgram(r) != "codex" {
		t.Errorf("codex's program %q", runnerProgram(r))
	}
	r, err = newRunner("command", "cat -n", "", []string{"x"}, nil, getenv)
	if cmd, ok := r.(*modelcli.Command); err != nil || !ok || runnerProgram(r) != "cat" || len(cmd.Args) != 1 {
		t.Errorf("command: %+v, %v", r, err)
	}
	if _, err := newRunner("command", "   ", "", nil, nil, getenv); !errkind.Is(err, errkind.Invalid) {
		t.Errorf("command without words: %v", err)
	}
}

// TestCheckedKeyringRefuses: under trust known, a keyring with keys that
// this account could rewrite (its own) is refused (Invalid),
// with the single-account hint for watch only; under any it is a
// warning.
func TestCheckedKeyringRefuses(t *testing.T) {
	root := tree.Root(t.TempDir())
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.MkdirAll(keys, 0o755); err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := keyring.Open(keys).Trust("alice", keyring.FormatPublic(priv.Public().(ed25519.PublicKey))); err != nil {
		t.Fatal(err)
	}
	var warn strings.Builder
	_, err = CheckedKeyring("watch", root, keys, signing.Known, false, &warn)
	if !errkind.Is(err, errkind.Invalid) || !strings.Contains(err.Error(), "watch: refusing the keyring") || !strings.Contains(err.Error(), "; on a single-account setup pass --allow-writable-keyring") {
		t.Errorf("watch: %v", err)
	}
	if _, err := CheckedKeyring("serve", root, keys, signing.Known, false, &warn); err == nil || strings.Contains(err.Error(), "; on a single-account setup pass") {
		t.Errorf("serve: %v; want a refusal without watch's hint", err)
	}
	if _, err := CheckedKeyring("watch", root, keys, signing.Known, true, &warn); err != nil {
		t.Errorf("allowed: %v", err)
	}
	if _, err := CheckedKeyring("watch", root, keys, signing.Any, false, &warn); err != nil || !strings.Contains(warn.String(), "warning") {
		t.Errorf("trust any: %v, warned %q", err, warn.String())
	}
}
