package main

import (
	"context"
	"fmt"
	"io"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
)

// runVerify audits the signatures of a channel's messages.
func runVerify(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("verify", helpText("verify"), stderr)
	ch := needChannel(fs, "channel")
	archive := fs.Bool("archive", false, "include archived messages (channels/C/archive/)")
	asJSON := fs.Bool("json", false, `print {"channel", "messages", "verdicts": {VERDICT: N}, "forgeries": [{"id", "file", "from", "verdict"}], "forged_claims": [{"agent", "file", "kind", "verdict"}]}`)
	c := addCommon(fs, withKeyring, withRoot)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	return c.use(ctx, "", getenv, stderr, func(svc *openedService) error {
		p := printer{errw: stderr}
		a, err := svc.Audit(ctx, service.AuditRequest{Channel: *ch, Archive: *archive, Skipped: func(s channel.Skip) { p.skips([]channel.Skip{s}) }})
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if a.ClaimsErr != "" {
			fmt.Fprintf(stderr, "collab: verify: claims: %s\n", a.ClaimsErr)
		}
		if err := show(stdout, *asJSON, a, a.Text()); err != nil {
			return err
		}
		if len(a.Forgeries) > 0 || len(a.Claims) > 0 {
			return &exitError{code: exitFailure, msg: fmt.Sprintf("verify: %d forged message(s) and %d forged claim file(s) in channel %s", len(a.Forgeries), len(a.Claims), tree.Printable(*ch))}
		}
		return nil
	})
}
