package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestArchive(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root}
	old := post(t, root, "c", "a", "b", "old news", time.Now().Add(-48*time.Hour))
	post(t, root, "c", "a", "b", "fresh", time.Now())
	before, _ := os.ReadFile(filepath.Join(root, "channels", "c", old.File))

	r := runCollab(t, env, "", "archive", "--channel", "c", "--older-than", "24h")
	if r.code != 0 || !strings.Contains(r.stdout, "archived 1 messages") {
		t.Fatalf("archive: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	month := old.Time().Format("2006-01")
	after, err := os.ReadFile(filepath.Join(root, "channels", "c", "archive", month, old.File))
	if err != nil || string(after) != string(before) {
		t.Errorf("archived file: %v; changed: %v", err, string(after) != string(before))
	}
	if _, err := os.Stat(filepath.Join(root, "channels", "c", old.File)); !os.IsNotExist(err) {
		t.Errorf("old message still in the channel: %v", err)
	}

	r = runCollab(t, env, "", "read", "--channel", "c")
	if strings.Contains(r.stdout, "old news") || !strings.Contains(r.stdout, "fresh") || r.stderr != "" {
		t.Errorf("read after archive: %q, stderr %q; want only the fresh message and no skip reports", r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "read", "--channel", "c", "--archive")
	if i, j := strings.Index(r.stdout, "old news"), strings.Index(r.stdout, "fresh"); i < 0 || j < i {
		t.Errorf("read --archive: %q; want the old message, then the fresh one", r.stdout)
	}

	r = runCollab(t, env, "", "archive", "--channel", "c", "--older-than", "24h", "--json")
	if r.code != 0 || r.stdout != "{\n  \"archived\": 0,\n  \"channel\": \"c\"\n}\n" {
		t.Errorf("archive --json: exit %d, %q", r.code, r.stdout)
	}

	for _, args := range [][]string{
		{"archive", "--channel", "c", "--older-than", "1m"},
		{"archive", "--channel", "../x", "--older-than", "24h"},
	} {
		if r := runCollab(t, env, "", args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2", args, r.code)
		}
	}
}
