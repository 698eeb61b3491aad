package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
)

// defaultQuiet is how long nothing new may happen in the channel, with
// every agent idle, before collab run judges the team done.
const defaultQuiet = 3 * time.Second

// runResult is what collab run prints at the end.
type runResult = service.RunResult

func runRun(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("run", helpText("run"), stderr)
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long (exit 3)")
	quiet := fs.Duration("quiet", defaultQuiet, "how long the channel must be quiet, every agent idle, to be done")
	asJSON := fs.Bool("json", false, "print the messages and then the result as JSON lines")
	tf := addTeamFlags(fs)
	if err := parseOne(fs, args, getenv, "want one workflow FILE (see 'collab run --help')"); err != nil {
		return err
	}
	root, team, err := tf.teamRequest(ctx, "run", fs.Arg(0), getenv, stderr)
	if err != nil {
		return err
	}
	seen := func(ch string, msgs []channel.Message, skips []channel.Skip, verifier *signing.Verifier) error {
		p := printer{w: stdout, errw: stderr, json: *asJSON, channel: ch, verifier: verifier}
		p.skips(skips)
		return p.messages(msgs)
	}
	res, err := mount(root, stderr).RunWorkflow(ctx, service.RunRequest{TeamRequest: team, Timeout: *timeout, Quiet: *quiet, Seen: seen})
	if res != nil {
		printRunResult(res, *asJSON, stdout)
	}
	return cmdErr("run", err)
}

// printRunResult prints the run's result.
func printRunResult(res *runResult, asJSON bool, stdout io.Writer) {
	if asJSON {
		json.NewEncoder(stdout).Encode(map[string]any{"result": res})
		return
	}
	fmt.Fprintf(stdout, "── %s@%s: %s\n", res.Workflow, res.Instance, res.Status)
	if res.Last != nil {
		fmt.Fprintf(stdout, "last message: %s from %s\n", res.Last.ID, tree.Printable(workflow.Display(res.Last.From)))
	}
	if len(res.Documents) > 0 {
		fmt.Fprintf(stdout, "documents changed: %s\n", tree.Printable(strings.Join(res.Documents, ", ")))
	}
	for _, a := range res.Agents {
		fmt.Fprintf(stdout, "%-20s jobs %d (failed %d)  $%.4f  %d tokens\n", workflow.Display(a.Agent), a.Jobs, a.Failed, a.CostUSD, a.Tokens)
	}
}
