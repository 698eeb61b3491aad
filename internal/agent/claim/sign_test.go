package claim_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/keytest"
)

// trustedKey makes a key for agent and a keyring that trusts it.
func trustedKey(t *testing.T) (*signing.Signer, *keyring.Ring) {
	t.Helper()
	ring := keytest.Ring(t)
	return keytest.Trusted(t, ring, agent), ring
}

// signedStores returns two signing stores of agent (on hosts a and b)
// whose verifier trusts agent's key, with the given policy, and a forger:
// a store of agent on host x with no key.
func signedStores(t *testing.T, root tree.Root, clk *clock, trust signing.Policy) (a, b, forger *claim.Store) {
	t.Helper()
	key, ring := trustedKey(t)
	v := signing.NewVerifier(ring)
	a, b, forger = store(root, owner("a", "ia"), clk), store(root, owner("b", "ib"), clk), store(root, owner("x", "ix"), clk)
	for _, s := range []*claim.Store{a, b} {
		s.Signer, s.Verifier, s.Trust = key, v, trust
	}
	if viaBridge { // the bridge takes a's and b's key; the forger writes on the files
		trustForBridge(key)
		forger.Dirs, forger.Signer = nil, nil
	}
	return a, b, forger
}

// TestForgedClaim: a claim in the folder of an agent with keys that does
// not verify is taken over at once under known, whatever its status, and
// obeyed under any; a signed one is obeyed.
func TestForgedClaim(t *testing.T) {
	for _, c := range []struct {
		name     string
		trust    signing.Policy
		signed   bool
		finish   string // the forged claim's status, if not working
		want     claim.Outcome
		takeover bool
	}{
		{"forged working under known", signing.Known, false, "", claim.Acquired, true},
		{"forged replied under known", signing.Known, false, claim.Replied, claim.Acquired, true},
		{"forged working under any", signing.Any, false, "", claim.Held, false},
		{"forged replied under any", signing.Any, false, claim.Replied, claim.Done, false},
		{"signed working under known", signing.Known, true, "", claim.Held, false},
		{"signed replied under signed", signing.Signed, true, claim.Replied, claim.Done, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			clk := newClock(t0)
			a, b, forger := signedStores(t, root, clk, c.trust)
			first := forger
			if c.signed {
				first = a
			}
			if _, out, err := first.Acquire(chan1, msgID); err != nil || out != claim.Acquired {
				t.Fatalf("first Acquire: %v %v", out, err)
			}
			if c.finish != "" {
				if err := first.Finish(chan1, msgID, c.finish, "", ""); err != nil {
					t.Fatal(err)
				}
			}
			got, out, err := b.Acquire(chan1, msgID)
			if err != nil || out != c.want {
				t.Fatalf("Acquire by b: %v, %v; want %v", out, err, c.want)
			}
			if c.takeover != (got.Takeovers == 1 && got.Owner.Instance == "ib" && got.Note == "taken over from a forged claim") {
				t.Errorf("claim after b's Acquire: %+v; want taken over: %v", got, c.takeover)
			}
		})
	}
}

// TestSignedClaimPlace: a signed claim verifies as its generation of its
// message only; copied to another message's claim it is forged.
func TestSignedClaimPlace(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := newClock(t0)
	a, b, _ := signedStores(t, root, clk, signing.Known)
	c, _, err := a.Acquire(chan1, msgID)
	if err != nil {
		t.Fatal(err)
	}
	v := a.Verifier
	if got := c.Verify(v, chan1, agent, msgID, 0); got != signing.Verified {
		t.Errorf("round trip: %v, want verified", got)
	}
	for name, got := range map[string]signing.Verdict{
		"another generation": c.Verify(v, chan1, agent, msgID, 1),
		"another message":    c.Verify(v, chan1, agent, "msg-20260111-163316-claude-0000", 0),
		"another channel":    c.Verify(v, "ops", agent, msgID, 0),
	} {
		if got != signing.BadSignature {
			t.Errorf("%s: %v, want bad-signature", name, got)
		}
	}
	// Copy the file to another message's claim: b takes that over at once.
	dir := root.AgentClaims(chan1, agent)
	other := "msg-20260111-163316-claude-0000"
	data, err := os.ReadFile(filepath.Join(dir, msgID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, other+".json"), data, 0o666); err != nil {
		t.Fatal(err)
	}
	if got, out, err := b.Acquire(chan1, other); err != nil || out != claim.Acquired || got.Takeovers != 1 {
		t.Errorf("copied claim: %v %v %+v, want taken over", out, err, got)
	}
	if _, out, _ := b.Acquire(chan1, msgID); out != claim.Held {
		t.Errorf("a's own signed claim: %v, want held", out)
	}
}

// TestForgedTakeoverNotALoss: a forged newer generation does not make the
// owner stop (under known); under any it does, as before.
func TestForgedTakeoverNotALoss(t *testing.T) {
	for _, trust := range []signing.Policy{signing.Known, signing.Any} {
		t.Run(string(trust), func(t *testing.T) {
			root := tree.Root(t.TempDir())
			clk := newClock(t0)
			a, _, forger := signedStores(t, root, clk, trust)
			if _, _, err := a.Acquire(chan1, msgID); err != nil {
				t.Fatal(err)
			}
			clk.Add(2 * grace) // a is silent: the forger may take over
			if _, out, err := forger.Acquire(chan1, msgID); err != nil || out != claim.Acquired {
				t.Fatalf("forger's takeover: %v %v", out, err)
			}
			err := a.Heartbeat(chan1, msgID)
			if trust == signing.Any {
				if !errors.Is(err, claim.ErrLost) {
					t.Errorf("Heartbeat under any: %v, want ErrLost", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Heartbeat after a forged takeover: %v, want nil", err)
			}
			c, err := a.Read(chan1, msgID)
			if err != nil || c.Owner.Instance != "ia" || c.Takeovers != 2 {
				t.Errorf("claim after: %+v %v; want a's generation 2", c, err)
			}
			if err := a.Finish(chan1, msgID, claim.Replied, "msg-r", ""); err != nil {
				t.Errorf("Finish: %v", err)
			}
		})
	}
}

// TestForgedToken: a forged reply token is renewed past under known.
func TestForgedToken(t *testing.T) {
	for _, c := range []struct {
		trust signing.Policy
		want  string
	}{{signing.Known, "msg-mine"}, {signing.Any, "msg-forged"}} {
		t.Run(string(c.trust), func(t *testing.T) {
			root := tree.Root(t.TempDir())
			a, b, forger := signedStores(t, root, newClock(t0), c.trust)
			if _, _, err := forger.ReserveReply(chan1, msgID, "msg-forged"); err != nil {
				t.Fatal(err)
			}
			got, _, err := a.ReserveReply(chan1, msgID, "msg-mine")
			if err != nil || got != c.want {
				t.Errorf("ReserveReply: %q %v, want %q", got, err, c.want)
			}
			// Another signer follows a's signed token.
			if got, _, _ := b.ReserveReply(chan1, msgID, "msg-b"); got != c.want {
				t.Errorf("b's ReserveReply: %q, want %q", got, c.want)
			}
		})
	}
}

// TestTornClaimNotForged: a claim file that does not decode keeps the grace
// period under known (it may be a torn read of a real claim).
func TestTornClaimNotForged(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := newClock(time.Now().UTC())
	_, b, _ := signedStores(t, root, clk, signing.Known)
	dir := root.AgentClaims(chan1, agent)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, msgID+".json"), []byte(`{"message":`), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, out, err := b.Acquire(chan1, msgID); err != nil || out != claim.Held {
		t.Errorf("torn claim: %v %v, want held", out, err)
	}
}

// TestClaimJudgedAtItsMessage: a claim or reply token is judged at the
// later of its own time and its message's (the time in the id), so a key
// revoked before the message cannot sign a claim of it by dating the
// claim earlier, and one dated more than the clock skew before its
// message is a bad signature.
func TestClaimJudgedAtItsMessage(t *testing.T) {
	key, ring := trustedKey(t)
	msgTime := claim.MessageTime(msgID)
	if msgTime.IsZero() {
		t.Fatalf("no time in %s", msgID)
	}
	// Revoked a minute after the message was named.
	if err := ring.Revoke(agent, key.PublicKey(), msgTime.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(ring)
	for _, c := range []struct {
		name string
		at   time.Time
		want signing.Verdict
	}{
		{"at the message, before the revocation", msgTime, signing.Verified},
		{"after the revocation", msgTime.Add(2 * time.Minute), signing.RevokedKey},
		{"backdated within the skew", msgTime.Add(-30 * time.Minute), signing.Verified},
		{"backdated beyond the skew", msgTime.Add(-2 * time.Hour), signing.BadSignature},
	} {
		cl := claim.Claim{Channel: chan1, Message: msgID, Status: "running", Claimed: c.at, Heartbeat: c.at}
		cl.Signature = key.Sign(cl.Payload(chan1, agent, msgID, 0))
		if got := cl.Verify(v, chan1, agent, msgID, 0); got != c.want {
			t.Errorf("claim %s: %v, want %v", c.name, got, c.want)
		}
		tok := claim.Token{Reply: "msg-x", Time: c.at}
		tok.Signature = key.Sign(tok.Payload(chan1, agent, msgID, 0))
		if got := tok.Verify(v, chan1, agent, msgID, 0); got != c.want {
			t.Errorf("token %s: %v, want %v", c.name, got, c.want)
		}
	}
}
