package service

import (
	"fmt"
	"strings"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Text is a as collab verify prints it: the count of each verdict, then
// each forged message and claim file.
func (a Audit) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d messages", tree.Printable(a.Channel), a.Messages)
	for _, verdict := range []signing.Verdict{signing.Verified, signing.Unsigned, signing.BadSignature, signing.UnknownKey, signing.RevokedKey} {
		if n := a.Verdicts[verdict.String()]; n > 0 {
			fmt.Fprintf(&b, ", %d %s", n, verdict)
		}
	}
	b.WriteString("\n")
	// Unsigned or signed with a key not theirs: forged only because the
	// sender has keys.
	what := func(v signing.Verdict, who string) string {
		if v == signing.Unsigned || v == signing.UnknownKey {
			return v.String() + ", but " + who + " has keys"
		}
		return v.String()
	}
	for _, f := range a.Forgeries {
		fmt.Fprintf(&b, "FORGED %s from %s: %s\n", tree.Printable(f.File), tree.Printable(f.From), what(f.Verdict, tree.Printable(f.From)))
	}
	for _, f := range a.Claims {
		fmt.Fprintf(&b, "FORGED claims/%s/%s (%s in %s's name): %s\n", a.Channel, tree.Printable(f.File), f.Kind, f.Agent, what(f.Verdict, f.Agent))
	}
	return b.String()
}
