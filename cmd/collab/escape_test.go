package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNamesEscaped: a name from the tree (a file in a listing, a message's
// from, to and type) reaches the terminal with its control characters
// escaped, in read's transcript and skip reports and in who's warnings.
func TestNamesEscaped(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root}
	const evil = "\x1b]0;pwned\x07\x1b[2J\x9b"
	m := post(t, root, "c", "claude", "codex", "hi", time.Date(2026, 1, 11, 16, 33, 0, 0, time.UTC))
	file := filepath.Join(root, "channels", "c", m.File)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["from"], raw["to"], raw["type"] = "x"+evil, "y"+evil, "z"+evil
	if data, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "channels", "c", "msg-"+evil+".json"), []byte("{"), 0o666); err != nil {
		t.Fatal(err)
	}
	presence := filepath.Join(root, "signals", "presence")
	if err := os.MkdirAll(presence, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(presence, "a"+evil+".json"), []byte("{"), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"read", "--channel", "c"}, {"who"}} {
		r := runCollab(t, env, "", args...)
		out := r.stdout + r.stderr
		if strings.ContainsAny(out, "\x1b\x07\u009b") {
			t.Errorf("%q prints control characters raw: stdout %q stderr %q", args, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, `\x1b]0;pwned\x07\x1b[2J\x9b`) {
			t.Errorf("%q: stderr %q does not show the file name escaped", args, r.stderr)
		}
	}
}
