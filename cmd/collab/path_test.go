package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestWatchPutsCollabOnPath: a watcher whose binary is named collab puts
// its folder first on the CLI's PATH, so the agent can run `collab send`
// and `collab who`. The CLI here is a shell printing where collab is.
func TestWatchPutsCollabOnPath(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	bin := filepath.Join(t.TempDir(), "collab")
	copyFile(t, os.Args[0], bin) // a copy, not a symlink: os.Executable resolves those
	root := newTree(t)
	// PATH without the copy's folder; COLLAB_TEST_AS makes the copy run main.
	startWatch(t, bin, root, "claude", []string{"PATH=/usr/bin:/bin"},
		"--channel", "dev", "--cli", "command", "--cmd", `sh -c 'command -v collab'`)
	id := send(t, root, "dev", "human", "claude", "where is collab?")
	waitFor(t, func() bool { return len(replies(t, root, "dev", "claude")[id]) == 1 })
	m, err := channel.Lookup(tree.Root(root), "dev", replies(t, root, "dev", "claude")[id][0])
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(m.Content.Text); got != bin {
		t.Errorf("the CLI found collab at %q, want the watcher's own %q", got, bin)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
