package main

import (
	"io/fs"
	"strings"
	"testing"
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
