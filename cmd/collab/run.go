package main

import (
	"context"
	"io"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
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
	if res != nil && *asJSON {
		jsonLine(stdout, map[string]any{"result": res})
	} else if res != nil {
		io.WriteString(stdout, res.Text())
	}
	return cmdErr("run", err)
}
