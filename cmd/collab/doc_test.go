package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoc(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
	ok := func(stdin string, args ...string) string {
		t.Helper()
		r := runCollab(t, env, stdin, append([]string{"doc"}, args...)...)
		if r.code != 0 {
			t.Fatalf("doc %v: exit %d: %s", args, r.code, r.stderr)
		}
		return r.stdout
	}
	if r := runCollab(t, env, "", "doc", "read"); r.code != 1 || !strings.Contains(r.stderr, "notes.md does not exist in channel dev") {
		t.Errorf("read before create: exit %d, %q", r.code, r.stderr)
	}
	ok("", "create", "notes.md", "--text", "# Notes")
	ok("- from stdin\n", "append")
	ok("", "append", "--text", "- from text")
	if got := ok("", "read"); got != "# Notes\n- from stdin\n- from text\n" {
		t.Errorf("read = %q", got)
	}
	var d struct {
		File, Content, Version string
	}
	if err := json.Unmarshal([]byte(ok("", "read", "notes.md", "--json")), &d); err != nil || d.File != "notes.md" || !strings.HasPrefix(d.Version, "sha256:") {
		t.Fatalf("read --json: %+v, %v", d, err)
	}
	// Agent B writes on top of what it read; agent A, holding the old
	// version, is refused with exit 4 (refused) and its text is not written.
	v2 := strings.TrimSpace(ok("", "write", "--if-version", d.Version, "--text", "B"))
	r := runCollab(t, env, "", "doc", "write", "--if-version", d.Version, "--text", "A")
	if r.code != exitRefused || !strings.Contains(r.stderr, "version conflict") {
		t.Errorf("stale write: exit %d, %q", r.code, r.stderr)
	}
	if got := ok("", "read"); got != "B\n" {
		t.Errorf("after the refused write: %q", got)
	}
	if r := runCollab(t, env, "", "doc", "create", "notes.md", "--text", "x"); r.code != exitRefused || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("create of an existing file: exit %d, %q", r.code, r.stderr)
	}
	ok("", "create", "findings/auth.md", "--text", "weak hash")
	var list []struct {
		File string
		Size int64
	}
	if err := json.Unmarshal([]byte(ok("", "list", "--json")), &list); err != nil || len(list) != 2 || list[0].File != "findings/auth.md" || list[1].File != "notes.md" {
		t.Errorf("list --json = %+v, %v", list, err)
	}
	if got := ok("", "list"); !strings.HasPrefix(got, "FILE") || !strings.Contains(got, "findings/auth.md  10") {
		t.Errorf("list:\n%s", got)
	}
	if r := runCollab(t, env, "", "doc", "delete", "notes.md", "--if-version", d.Version); r.code != exitRefused {
		t.Errorf("delete at an old version: exit %d", r.code)
	}
	ok("", "delete", "notes.md", "--if-version", v2)
	ok("", "delete", "findings/auth.md")
	if got := ok("", "list", "--json"); got != "[]\n" {
		t.Errorf("empty list --json = %q", got)
	}
}

func TestDocBadInput(t *testing.T) {
	root := newTree(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("secret"), 0o666)
	dir := filepath.Join(root, "docs", "dev")
	os.MkdirAll(dir, 0o777)
	os.Symlink(secret, filepath.Join(dir, "evil.md"))
	os.Symlink(outside, filepath.Join(dir, "out"))
	env := map[string]string{"COLLAB_ROOT": root}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no action", []string{"doc", "-s", "dev"}, 2, "no action"},
		{"unknown action", []string{"doc", "-s", "dev", "edit"}, 2, "unknown action"},
		{"no channel", []string{"doc", "read"}, 2, "no channel"},
		{"bad channel", []string{"doc", "read", "-s", "../dev"}, 2, "invalid name"},
		{"dot-dot", []string{"doc", "read", "-s", "dev", "../../etc/passwd"}, 2, "may not climb"},
		{"absolute", []string{"doc", "write", "-s", "dev", "/etc/passwd", "--text", "x"}, 2, "absolute"},
		{"dot-file", []string{"doc", "read", "-s", "dev", ".notes.md.lock"}, 2, "dot-file"},
		{"two files", []string{"doc", "read", "-s", "dev", "a.md", "b.md"}, 2, "one file at a time"},
		{"create unnamed", []string{"doc", "create", "-s", "dev", "--text", "x"}, 2, "name the file"},
		{"if-version on append", []string{"doc", "append", "-s", "dev", "--if-version", "v", "--text", "x"}, 2, "--if-version is for"},
		{"text on read", []string{"doc", "read", "-s", "dev", "--text", "x"}, 2, "--text is for"},
		{"symlink out: read", []string{"doc", "read", "-s", "dev", "evil.md"}, 1, "doc read"},
		{"symlink out: write", []string{"doc", "write", "-s", "dev", "evil.md", "--text", "pwned"}, 1, "doc write"},
		{"symlink folder out", []string{"doc", "append", "-s", "dev", "out/secret", "--text", "pwned"}, 1, "doc append"},
		{"symlink folder out: create", []string{"doc", "create", "-s", "dev", "out/new.md", "--text", "pwned"}, 1, "doc create"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCollab(t, env, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tt.code, tt.msg)
			}
		})
	}
	if data, _ := os.ReadFile(secret); string(data) != "secret" {
		t.Errorf("secret is now %q", data)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("the outside folder has %d entries", len(ents))
	}
}
