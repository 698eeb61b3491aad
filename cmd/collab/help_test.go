package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/docs"
	"github.com/collabdev/collab/internal/dev/doccheck"
	"github.com/collabdev/collab/internal/plumbing/safedir"
)

// TestHelpFiles: every command has its help file, and every help file is
// a command's or a subcommand's (COMMAND-SUB.txt).
func TestHelpFiles(t *testing.T) {
	names := map[string]bool{}
	for _, c := range commands() {
		names[c.name] = true
		if _, err := fs.Stat(helpFiles, "help/"+c.name+".txt"); err != nil {
			t.Errorf("command %s has no help file: %v", c.name, err)
		}
	}
	files, err := fs.Glob(helpFiles, "help/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no help files (%v)", err)
	}
	for _, f := range files {
		cmd, _, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(f, "help/"), ".txt"), "-")
		if !names[cmd] {
			t.Errorf("%s is no command's help", f)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("helpText of a missing file did not panic")
		}
	}()
	helpText("no-such-command")
}

var update = flag.Bool("update", false, "rewrite docs/commands.md from the commands' --help")

// referencePath is the command reference, from this package's folder.
const referencePath = "../../docs/commands.md"

// helpSubs are the subcommands the reference shows after their command:
// those whose --help differs from the command's. (doc's actions and
// outbox's ls and flush share their command's flags, and so its help.)
var helpSubs = map[string][]string{
	"jobs":     {"show", "kill"},
	"task":     {"add", "list", "show", "claim", "next", "checkpoint", "done", "fail", "retry", "context", "worktree"},
	"nats":     {"init", "parity"},
	"inbox":    {"ack"},
	"key":      {"new", "trust", "revoke", "list"},
	"delegate": {"ls", "status", "send", "stop", "rm"},
	"agent":    {"register", "unregister"},
	"serve":    {"token new", "token ls", "token rm"},
}

// helpEnv is the environment the reference is made in: a flag's default
// that comes from it (serve --tokens, from $HOME) reads the same on every
// machine and for every user, and as its variable.
var helpEnv = map[string]string{"HOME": "$HOME"}

// helpOf returns what "collab ARGS --help" prints, on either stream.
func helpOf(t *testing.T, args string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	argv := append(strings.Fields(args), "--help")
	getenv := func(k string) string { return helpEnv[k] }
	if err := run(context.Background(), argv, getenv, strings.NewReader(""), &stdout, &stderr); exitCode(err, io.Discard) != 0 {
		t.Fatalf("collab %s --help: %v", args, err)
	}
	return stdout.String() + stderr.String()
}

// commandReference makes docs/commands.md: every command's and
// subcommand's --help, each a section, with a table of contents.
func commandReference(t *testing.T) string {
	var toc, body strings.Builder
	section := func(args, indent, summary, note, help string) {
		title := strings.TrimSpace("collab " + args)
		fmt.Fprintf(&toc, "%s- [%s](#%s)%s\n", indent, title, strings.ReplaceAll(title, " ", "-"), summary)
		if strings.Contains(help, "```") {
			t.Fatalf("%s --help holds a code fence", title)
		}
		fmt.Fprintf(&body, "\n## %s\n\n%s```text\n%s```\n", title, note, help)
	}
	section("", "", "", "", helpOf(t, ""))
	for _, c := range commands() {
		parent := helpOf(t, c.name)
		section(c.name, "", ": "+c.summary, "", parent)
		for _, sub := range helpSubs[c.name] {
			help, note := helpOf(t, c.name+" "+sub), ""
			if rest, ok := strings.CutPrefix(help, parent); ok {
				// task's and key's subcommands print their command's
				// text, then their own flags.
				help = strings.TrimPrefix(rest, "\n")
				note = fmt.Sprintf("The text of [collab %s](#collab-%s), then:\n\n", c.name, c.name)
			}
			section(c.name+" "+sub, "  ", "", note, help)
		}
	}
	return "# Command reference\n\n" +
		"What `collab --help` and every `collab COMMAND [SUBCOMMAND] --help` print,\n" +
		"generated from the commands' help texts (cmd/collab/help/) and flags: do not\n" +
		"edit; `go test ./cmd/collab -run TestCommandReference -update` rewrites it.\n\n" +
		"## Contents\n\n" + toc.String() + body.String()
}

// TestCommandReference: docs/commands.md is what the commands print.
func TestCommandReference(t *testing.T) {
	got := commandReference(t)
	// Every help file is printed by some --help here.
	files, _ := fs.Glob(helpFiles, "help/*.txt")
	for _, f := range files {
		if !strings.Contains(got, strings.TrimSuffix(helpText(f[len("help/"):len(f)-len(".txt")]), "\n")) {
			t.Errorf("%s is printed by no command's --help in the reference", f)
		}
	}
	// Every task command is in it.
	if subs := slices.Sorted(maps.Keys(taskSubs)); !slices.Equal(subs, slices.Sorted(slices.Values(helpSubs["task"]))) {
		t.Errorf("the reference shows task %q, the task commands are %q", helpSubs["task"], subs)
	}
	// Nothing of this machine's: no default from the real $HOME.
	if home, _ := os.UserHomeDir(); len(home) > 1 && strings.Contains(got, home) {
		t.Errorf("the reference shows this machine's home folder %s: make that default come from getenv", home)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(referencePath), 0o755); err != nil {
			t.Fatal(err)
		}
		d, err := safedir.Open(filepath.Dir(referencePath))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Replace(filepath.Base(referencePath), []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("%v: make it with go test ./cmd/collab -run TestCommandReference -update", err)
	}
	if got != string(want) {
		g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Errorf("docs/commands.md is not what the commands print (line %d: the file has %q, the commands %q); "+
			"rewrite it with go test ./cmd/collab -run TestCommandReference -update", i+1, at(w, i), at(g, i))
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end)"
}

// TestHelpTopics: every command names the page of the manual that says
// more, and that page and heading exist; 'collab help' prints a command's
// help and a page of the manual, and refuses what is neither.
func TestHelpTopics(t *testing.T) {
	for _, c := range commands() {
		ref, ok := docOf[c.name]
		if !ok {
			t.Errorf("command %s has no page in docOf", c.name)
			continue
		}
		file, anchor, _ := strings.Cut(ref, "#")
		page, ok := docs.Page(strings.TrimSuffix(file, ".md"))
		if !ok {
			t.Errorf("%s: docs/%s is not a page of the manual", c.name, file)
			continue
		}
		if !slices.Contains(doccheck.Anchors(string(page)), anchor) {
			t.Errorf("%s: docs/%s has no heading #%s", c.name, file, anchor)
		}
	}
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"help", "protocol"}, noEnv, nil, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "# collab protocol") {
		t.Errorf("help protocol = %v, %.40q", err, out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"help", "archive"}, noEnv, nil, &out, &errb); err != nil ||
		!strings.Contains(out.String(), "Usage: collab archive") || !strings.Contains(out.String(), "More: collab help messaging (docs/messaging.md#big-channels)") {
		t.Errorf("help archive = %v, %q", err, out.String())
	}
	err := run(context.Background(), []string{"help", "nosuch"}, noEnv, nil, &out, &errb)
	if code := exitCode(err, &errb); code != exitUsage || !strings.Contains(errb.String(), "topics: benchmarks") {
		t.Errorf("help nosuch: exit %d, %q", code, errb.String())
	}
}

func noEnv(string) string { return "" }
