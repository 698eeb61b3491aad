package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// debts are the files and functions over a limit today, with their size
// when listed. Shrink them; never add to this list to make a change pass.
var debts = map[string]int{}

// maxCmdLines is the budget of cmd/collab's non-test lines, within
// MaxCmdLines since it met it; lower it as the command shrinks, never
// raise it. (Raised once, from 3486 to 3550 on 2026-11-27, for the new
// command collab join (its flags and the hook's entry, 64 lines): the
// next change to cmd/collab takes it back under 3500; 3541 after issue
// 29, whose status text moved to internal/service.)
var maxCmdLines = 3541

func TestLayout(t *testing.T) {
	r, err := Measure("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if r.CmdFiles == 0 || r.Libraries < 50 {
		t.Fatalf("measured %d command and %d library files: not the module's folder", r.CmdFiles, r.Libraries)
	}
	t.Logf("cmd/collab: %d lines in %d files; longest function %s (%d lines)", r.CmdLines, r.CmdFiles, r.Longest.Name, r.Longest.Lines)
	if r.CmdLines > maxCmdLines {
		t.Errorf("cmd/collab has %d non-test lines, over %d: move what is not flags, one call and printing into internal/service", r.CmdLines, maxCmdLines)
	}
	seen := map[string]bool{}
	check := func(what string, list []Size, limit int) {
		for _, s := range list {
			seen[s.Name] = true
			was, listed := debts[s.Name]
			switch {
			case !listed:
				t.Errorf("%s %s has %d lines, over %d", what, s.Name, s.Lines, limit)
			case s.Lines > was:
				t.Errorf("%s %s grew to %d lines (listed at %d, limit %d)", what, s.Name, s.Lines, was, limit)
			}
		}
	}
	check("cmd/collab function", r.CmdFuncs, MaxCmdFunc)
	check("library file", r.LibFiles, MaxLibraryFile)
	check("library function", r.LibFuncs, MaxLibraryFunc)
	var gone []string
	for name := range debts {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	for _, name := range gone {
		t.Errorf("%s is within its limit now (or gone): take it off the debts list", name)
	}
}

func TestMeasureSeesALongFunction(t *testing.T) {
	// A module with one library file over the limit, holding one method
	// over the limit: written here, not kept as a long file in the tree.
	dir := t.TempDir()
	src := "package x\n\ntype T struct{}\n\nfunc (*T) Long() {\n" + strings.Repeat("\t_ = 1\n", 101) + "}\n\n" +
		strings.Repeat("// pad\n", 600) + "func Short() {}\n"
	if err := os.MkdirAll(filepath.Join(dir, "internal", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "internal", "x", "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Measure(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]Size{{"internal/x/x.go:T.Long", 103}})
	if got := fmt.Sprint(r.LibFuncs); got != want {
		t.Errorf("library functions over the limit: %s, want %s", got, want)
	}
	if len(r.LibFiles) != 1 || r.LibFiles[0].Name != "internal/x/x.go" {
		t.Errorf("library files over the limit: %v", r.LibFiles)
	}
}
