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
	fs := cmdFlags("ls", helpText("ls"), stderr)
	asJSON := fs.Bool("json", false, "print JSON lines")
	c := addCommon(fs, withRoot)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	list, err := c.mount(getenv, stderr).Instances(ctx)
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
