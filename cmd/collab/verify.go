package main

import (
	"context"
	"fmt"
	"io"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// forgery is one forged message, as verify reports it.
type forgery struct {
	ID      string          `json:"id"`
	File    string          `json:"file"`
	From    string          `json:"from"`
	Verdict signing.Verdict `json:"verdict"`
}

// runVerify audits the signatures of a channel's messages.
func runVerify(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab verify --channel C [--archive] [--json]

Check the signature of every message of a channel against the keyring and
print how many messages got each verdict (verified, unsigned, bad-signature,
unknown-key, revoked-key), then each forgery: a bad signature, a revoked
key, or a message that names a sender who has keys but is unsigned or
signed with a key not theirs. Then each claim, reply token and seen file
of the channel (ROOT/claims/C/AGENT) forged in the same way in an agent's
name: what someone writes to keep that agent from answering. Exit 1 when
there is a forgery, 0 otherwise.

Flags:
`)
		fs.PrintDefaults()
	}
	ch := channelFlag(fs, "channel")
	archive := fs.Bool("archive", false, "include archived messages (channels/C/archive/)")
	asJSON := fs.Bool("json", false, `print {"channel", "messages", "verdicts": {VERDICT: N}, "forgeries": [{"id", "file", "from", "verdict"}], "forged_claims": [{"agent", "file", "kind", "verdict"}]}`)
	ringf := keyringFlag(fs)
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("verify: unexpected argument %q", fs.Arg(0))
	}
	if err := checkChannel("verify", *ch); err != nil {
		return err
	}
	root := tree.Resolve(*rootf, getenv)
	v := verifierFor(root, openKeyring(root, *ringf), stderr)
	msgs, skips, err := channel.ReadAll(root, *ch, channel.ReaderOptions{Retries: 1})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	p := printer{errw: stderr}
	p.skips(skips)
	if *archive {
		old, skips, err := channel.ReadArchive(root, *ch, channel.ReaderOptions{})
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		p.skips(skips)
		msgs = append(old, msgs...)
	}
	counts := map[string]int{}
	bad := []forgery{}
	for i := range msgs {
		m := &msgs[i]
		verdict := m.Verify(v, *ch)
		counts[verdict.String()]++
		if v.Forged(m.From, verdict) {
			bad = append(bad, forgery{m.ID, m.File, m.From, verdict})
		}
	}
	// The claims, reply tokens and seen files in a keyed agent's name that
	// it did not write: how someone would keep it from answering.
	claims, cerr := delivery.Audit(root, *ch, v)
	if cerr != nil {
		fmt.Fprintf(stderr, "collab: verify: claims: %v\n", cerr)
	}
	if claims == nil {
		claims = []delivery.Forged{}
	}
	if *asJSON {
		err = writeJSON(stdout, struct {
			Channel   string            `json:"channel"`
			Messages  int               `json:"messages"`
			Verdicts  map[string]int    `json:"verdicts"`
			Forgeries []forgery         `json:"forgeries"`
			Claims    []delivery.Forged `json:"forged_claims"`
		}{*ch, len(msgs), counts, bad, claims})
	} else {
		fmt.Fprintf(stdout, "%s: %d messages", tree.Printable(*ch), len(msgs))
		for _, verdict := range []signing.Verdict{signing.Verified, signing.Unsigned, signing.BadSignature, signing.UnknownKey, signing.RevokedKey} {
			if n := counts[verdict.String()]; n > 0 {
				fmt.Fprintf(stdout, ", %d %s", n, verdict)
			}
		}
		fmt.Fprintln(stdout)
		for _, f := range bad {
			what := f.Verdict.String()
			if f.Verdict == signing.Unsigned || f.Verdict == signing.UnknownKey {
				what += ", but " + tree.Printable(f.From) + " has keys"
			}
			fmt.Fprintf(stdout, "FORGED %s from %s: %s\n", tree.Printable(f.File), tree.Printable(f.From), what)
		}
		for _, f := range claims {
			what := f.Verdict.String()
			if f.Verdict == signing.Unsigned || f.Verdict == signing.UnknownKey {
				what += ", but " + f.Agent + " has keys"
			}
			fmt.Fprintf(stdout, "FORGED claims/%s/%s (%s in %s's name): %s\n", *ch, tree.Printable(f.File), f.Kind, f.Agent, what)
		}
	}
	if err != nil {
		return err
	}
	if len(bad) > 0 || len(claims) > 0 {
		return &exitError{code: exitFailure, msg: fmt.Sprintf("verify: %d forged message(s) and %d forged claim file(s) in channel %s", len(bad), len(claims), tree.Printable(*ch))}
	}
	return nil
}
