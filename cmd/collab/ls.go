package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
)

func runLs(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("ls", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab ls [--json]

List the workflow instances (ROOT/workflows): NAME, INSTANCE, SOURCE (the
file), STATUS (starting, running, done, failed, stopped, timeout; dead for
a running one whose process or agents are gone) and AGENTS (an agent
stopped on its own, collab stop NAME@INSTANCE, marked "(stopped)"). Then
the delegated sessions not removed (collab delegate ls), as NAME
"delegate", INSTANCE the session ID, SOURCE the branch; in JSON with a
"delegation" member, the session's record.

Flags:
`)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print JSON lines")
	rootf := rootFlag(fs)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	list, err := mount(tree.Resolve(*rootf, getenv), stderr).Instances(ctx)
	if err != nil {
		return fmt.Errorf("ls: %w", err)
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "%-20s %-16s %-30s %-8s %s\n", "NAME", "INSTANCE", "SOURCE", "STATUS", "AGENTS")
	}
	for _, r := range list {
		if *asJSON {
			if err := json.NewEncoder(stdout).Encode(r); err != nil {
				return err
			}
			continue
		}
		var agents []string
		for _, a := range r.Agents {
			d := workflow.Display(a)
			if slices.Contains(r.Stopped, a) {
				d += "(stopped)"
			}
			agents = append(agents, d)
		}
		fmt.Fprintf(stdout, "%-20s %-16s %-30s %-8s %s\n", tree.Printable(r.Name), tree.Printable(r.Instance),
			tree.Printable(r.File), r.Status, tree.Printable(strings.Join(agents, ",")))
	}
	return nil
}
