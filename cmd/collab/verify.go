package main

import (
	"context"
	"fmt"
	"io"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
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
		if *asJSON {
			err = writeJSON(stdout, a)
		} else {
			auditText(stdout, a)
		}
		if err != nil {
			return err
		}
		if len(a.Forgeries) > 0 || len(a.Claims) > 0 {
			return &exitError{code: exitFailure, msg: fmt.Sprintf("verify: %d forged message(s) and %d forged claim file(s) in channel %s", len(a.Forgeries), len(a.Claims), tree.Printable(*ch))}
		}
		return nil
	})
}

// auditText prints an audit: the count of each verdict, then each
// forgery.
func auditText(w io.Writer, a service.Audit) {
	fmt.Fprintf(w, "%s: %d messages", tree.Printable(a.Channel), a.Messages)
	for _, verdict := range []signing.Verdict{signing.Verified, signing.Unsigned, signing.BadSignature, signing.UnknownKey, signing.RevokedKey} {
		if n := a.Verdicts[verdict.String()]; n > 0 {
			fmt.Fprintf(w, ", %d %s", n, verdict)
		}
	}
	fmt.Fprintln(w)
	// Unsigned or signed with a key not theirs: forged only because the
	// sender has keys.
	what := func(v signing.Verdict, who string) string {
		if v == signing.Unsigned || v == signing.UnknownKey {
			return v.String() + ", but " + who + " has keys"
		}
		return v.String()
	}
	for _, f := range a.Forgeries {
		fmt.Fprintf(w, "FORGED %s from %s: %s\n", tree.Printable(f.File), tree.Printable(f.From), what(f.Verdict, tree.Printable(f.From)))
	}
	for _, f := range a.Claims {
		fmt.Fprintf(w, "FORGED claims/%s/%s (%s in %s's name): %s\n", a.Channel, tree.Printable(f.File), f.Kind, f.Agent, what(f.Verdict, f.Agent))
	}
}
