package service_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/scripts"
)

func initTree(t *testing.T, root tree.Root) service.Initialized {
	t.Helper()
	res, err := service.NewMount(service.Config{Root: root}).Init(context.Background(), service.InitRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestInitInstallsScripts: init writes the seed's entry points into
// ROOT/scripts, executable and as this collab ships them; again, it
// leaves one edited since (with a warning) and writes one removed.
func TestInitInstallsScripts(t *testing.T) {
	root := tree.Root(t.TempDir())
	res := initTree(t, root)
	if len(scripts.Names()) < 4 {
		t.Fatalf("scripts %v; want who, send-message, watcher, collab-exec", scripts.Names())
	}
	for _, name := range scripts.Names() {
		path := filepath.Join(root.Scripts(), name)
		want, _ := scripts.Read(name)
		got, err := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if err != nil || !bytes.Equal(got, want) || fi.Mode().Perm()&0o100 == 0 {
			t.Errorf("%s: %v, mode %v; want collab's script, executable", name, err, fi.Mode())
		}
		if !strings.Contains(strings.Join(res.Made, " "), path) {
			t.Errorf("Made %v does not name %s", res.Made, path)
		}
	}
	// The installed entry point runs collab (COLLAB_BIN) on this tree.
	bin := filepath.Join(t.TempDir(), "fake-collab")
	os.WriteFile(bin, []byte("#!/bin/sh\necho \"$COLLAB_ROOT|$*\"\n"), 0o755)
	cmd := exec.Command(filepath.Join(root.Scripts(), "who"), "alice")
	cmd.Env = append(os.Environ(), "COLLAB_BIN="+bin, "COLLAB_ROOT=")
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != string(root)+"|who alice" {
		t.Errorf("ROOT/scripts/who alice ran %q, %v; want collab who alice on %s", out, err, root)
	}

	who := filepath.Join(root.Scripts(), "who")
	edited := []byte("#!/bin/sh\necho mine\n")
	os.WriteFile(who, edited, 0o755)
	os.Remove(filepath.Join(root.Scripts(), "watcher"))
	res = initTree(t, root)
	if got, _ := os.ReadFile(who); !bytes.Equal(got, edited) {
		t.Errorf("init replaced the edited %s", who)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, who+" differs") {
		t.Errorf("warnings %q do not name the edited script", w)
	}
	if len(res.Made) != 1 || res.Made[0] != filepath.Join(root.Scripts(), "watcher") {
		t.Errorf("second init made %v; want the removed watcher only", res.Made)
	}
}

// TestInitPresenceLink: the original project's who script reads
// ROOT/presence; init links it to signals/presence, on a new tree and on
// one made before, so the script lists collab's agents.
func TestInitPresenceLink(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	root := tree.Root(t.TempDir())
	initTree(t, root)
	// A tree made before init linked it.
	if err := os.Remove(root.PresenceLink()); err != nil {
		t.Fatal(err)
	}
	if err := presence.Write(root, presence.Status{AgentID: "alice", State: presence.StateAwake, Substate: presence.SubIdle, Channel: "dev"}); err != nil {
		t.Fatal(err)
	}
	seedWho := func() string {
		cmd := exec.Command("sh", filepath.Join("testdata", "agent-collab-who"))
		cmd.Env = append(os.Environ(), "COLLAB_DIR="+string(root))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("agent-collab-who: %v: %s", err, out)
		}
		return string(out)
	}
	if out := seedWho(); strings.Contains(out, "alice") {
		t.Fatalf("without the link the script saw alice:\n%s", out)
	}
	res := initTree(t, root)
	if target, err := os.Readlink(root.PresenceLink()); err != nil || target != "signals/presence" {
		t.Fatalf("ROOT/presence -> %q, %v; want signals/presence", target, err)
	}
	if !strings.Contains(strings.Join(res.Made, " "), root.PresenceLink()) {
		t.Errorf("Made %v does not name the link", res.Made)
	}
	if out := seedWho(); !strings.Contains(out, "alice        AWAKE/IDLE      dev") {
		t.Errorf("the original who script does not list alice:\n%s", out)
	}
	// Once made, init leaves it; a folder of that name is left, warned of.
	if res := initTree(t, root); len(res.Made) != 0 || len(res.Warnings) != 0 {
		t.Errorf("third init: made %v, warnings %v", res.Made, res.Warnings)
	}
	other := tree.Root(t.TempDir())
	os.MkdirAll(other.PresenceLink(), 0o755)
	if res := initTree(t, other); !strings.Contains(strings.Join(res.Warnings, "\n"), "is not a link to signals/presence") {
		t.Errorf("a presence folder: warnings %v", res.Warnings)
	}
}
