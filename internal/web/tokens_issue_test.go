package web

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
)

// TestTokensIssue: Issue makes a person's or an agent's token as the
// request says, refuses a request that mixes them as Invalid, and Reach
// says where each reaches; removing an unknown id is NotFound.
func TestTokensIssue(t *testing.T) {
	toks := Tokens{Path: filepath.Join(t.TempDir(), "tokens.json")}
	for _, tc := range []struct {
		name    string
		req     TokenRequest
		kind    string
		reach   string
		invalid bool // refused as errkind.Invalid
	}{
		{"person", TokenRequest{Person: "bob"}, KindPerson, "-", false},
		{"agent on a channel", TokenRequest{Agent: "claude", Channel: "dev"}, KindAgent, "dev", false},
		{"agent on the URL's channel", TokenRequest{Agent: "claude"}, KindAgent, "*", false},
		{"both", TokenRequest{Person: "bob", Agent: "claude"}, "", "", true},
		{"person with a channel", TokenRequest{Person: "bob", Channel: "dev"}, "", "", true},
		{"bad person", TokenRequest{Person: "no body"}, "", "", true},
		{"bad agent", TokenRequest{Agent: "no body"}, "", "", true},
		{"bad channel", TokenRequest{Agent: "claude", Channel: "../x"}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret, rec, err := toks.Issue(tc.req)
			if tc.invalid {
				if !errkind.Is(err, errkind.Invalid) {
					t.Fatalf("Issue(%+v): %v, want an Invalid error", tc.req, err)
				}
				return
			}
			if err != nil || secret == "" {
				t.Fatalf("Issue(%+v): %q %v", tc.req, secret, err)
			}
			if rec.KindName() != tc.kind || rec.Reach() != tc.reach {
				t.Errorf("Issue(%+v): kind %s reach %s, want %s %s", tc.req, rec.KindName(), rec.Reach(), tc.kind, tc.reach)
			}
		})
	}
	err := toks.Remove("t-nothere")
	if !errors.Is(err, ErrNoToken) || errkind.Of(err) != errkind.NotFound {
		t.Errorf("Remove(unknown): %v, want ErrNoToken of kind NotFound", err)
	}
}
