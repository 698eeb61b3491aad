package claim

import (
	"strconv"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
)

// Payload kinds of signed claims and reply tokens.
const (
	KindClaim = "claim"
	KindToken = "claim-token"
)

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Payload returns the bytes the signature of c covers (see the package
// doc), c being generation gen of the claim of message id of channel in
// agent's folder.
func (c Claim) Payload(channel, agent, id string, gen int) []byte {
	o := c.Owner
	return signing.Payload(KindClaim, channel, agent, id, strconv.Itoa(gen),
		o.Agent, o.Host, strconv.Itoa(o.PID), o.BootID, o.PIDNS, o.Instance,
		c.Status, stamp(c.Claimed), stamp(c.Heartbeat), c.Reply, strconv.Itoa(c.Takeovers), c.Note)
}

// Verify returns the verdict on c, read as generation gen of the claim of
// message id of channel in agent's folder, as agent's.
func (c Claim) Verify(v *signing.Verifier, channel, agent, id string, gen int) signing.Verdict {
	if c.Signature == nil {
		return signing.Unsigned
	}
	return v.VerifyNamed(agent, MessageTime(id), c.Heartbeat, c.Payload(channel, agent, id, gen), c.Signature)
}

// Payload returns the bytes the signature of t covers, t being token gen
// of message id of channel in agent's folder.
func (t Token) Payload(channel, agent, id string, gen int) []byte {
	return signing.Payload(KindToken, channel, agent, id, strconv.Itoa(gen), t.Reply, t.Owner.Instance, stamp(t.Time))
}

// Verify returns the verdict on t, read as token gen of message id of
// channel in agent's folder, as agent's.
func (t Token) Verify(v *signing.Verifier, channel, agent, id string, gen int) signing.Verdict {
	if t.Signature == nil {
		return signing.Unsigned
	}
	return v.VerifyNamed(agent, MessageTime(id), t.Time, t.Payload(channel, agent, id, gen), t.Signature)
}

// MessageTime is the time in the name of message id (zero when it has
// none). No claim or reply token of a message is made before the message,
// so one dated more than the clock skew before it is a bad signature, and
// a revoked key is judged at the later of the two (signing.SignedAt): a
// key that leaked cannot date a claim before its revocation. The seen
// files of package delivery are judged the same way.
func MessageTime(id string) time.Time {
	n, err := channel.ParseID(id)
	if err != nil {
		return time.Time{}
	}
	return n.Time
}

// sign signs c as generation gen in agent's folder.
func (s *Store) sign(c *Claim, agent string, gen int) {
	c.Signature = s.Signer.Sign(c.Payload(c.Channel, agent, c.Message, gen))
}

// forged reports whether generation gen of the claim of message id, c, is
// refused by the store's trust policy (and logs it): see the package doc.
func (s *Store) forged(c Claim, channel, id string, gen int) bool {
	if c.torn || s.Trust == signing.Any || s.Verifier == nil && s.Trust != signing.Signed {
		return false
	}
	verdict := c.Verify(s.Verifier, channel, s.Self.Agent, id, gen)
	if s.Verifier.Accepts(s.Trust, s.Self.Agent, verdict) {
		return false
	}
	if s.Log != nil {
		s.Log.Warn("forged claim: taking it over", "channel", channel, "msg_id", id, "generation", gen,
			"owner", c.Owner.Agent, "verdict", verdict)
	}
	if s.OnForged != nil {
		s.OnForged(channel, id, "claim", c.Owner.Agent, verdict)
	}
	return true
}

// forgedToken is forged for reply tokens.
func (s *Store) forgedToken(t Token, channel, id string, gen int) bool {
	if s.Trust == signing.Any || s.Verifier == nil && s.Trust != signing.Signed {
		return false
	}
	verdict := t.Verify(s.Verifier, channel, s.Self.Agent, id, gen)
	if s.Verifier.Accepts(s.Trust, s.Self.Agent, verdict) {
		return false
	}
	if s.Log != nil {
		s.Log.Warn("forged reply token: renewing past it", "channel", channel, "msg_id", id, "token", gen, "verdict", verdict)
	}
	if s.OnForged != nil {
		s.OnForged(channel, id, "reply token", s.Self.Agent, verdict)
	}
	return true
}
