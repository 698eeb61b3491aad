package main

import (
	"context"
	"fmt"
	"io"

	"github.com/collabdev/collab/internal/service"
)

// runInit creates the tree's folders and, with --group, hands them to a
// shared group: owned by the group, group-writable and set-group-ID, so
// every file and folder made later inside belongs to the group too.
func runInit(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := cmdFlags("init", helpText("init"), stderr)
	group := flags.String("group", "", "shared group (name or numeric id) that owns the tree's folders")
	expire := flags.StringArray("expire-after", nil, "CHANNEL=D, repeatable: report a message of CHANNEL nobody claimed within D (10m, 2h; at most 24h; off) to its sender")
	asJSON := flags.Bool("json", false, `print a JSON array of the folders: {"path", "mode", "group"}`)
	c := addCommon(flags, withRoot)
	if err := parseNone(flags, args, getenv); err != nil {
		return err
	}
	res, err := c.mount(getenv, stderr).Init(ctx, service.InitRequest{Group: *group, ExpireAfter: *expire})
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	for _, msg := range res.Warnings {
		fmt.Fprintf(stderr, "collab: init: warning: %s\n", msg)
	}
	if *asJSON {
		return writeJSON(stdout, res.Folders)
	}
	for _, f := range res.Folders {
		fmt.Fprintf(stdout, "%s %-8s %s\n", f.Mode, f.Group, f.Path)
	}
	for _, p := range res.Made {
		fmt.Fprintf(stdout, "made %s\n", p)
	}
	if *group != "" {
		fmt.Fprintln(stdout, "Each agent's files are writable by its own account alone; the folders are the group's, sticky (docs/ is everyone's).")
	}
	return nil
}
