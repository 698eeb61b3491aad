package service

import (
	"context"
	"fmt"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// AuditRequest is the channel whose signatures an audit checks, its
// archive too with Archive. Skipped, if set, is told of each message file
// that cannot be read (default: the logger).
type AuditRequest struct {
	Channel string
	Archive bool
	Skipped func(channel.Skip)
}

// Forgery is one forged message an audit found.
type Forgery struct {
	ID      string          `json:"id"`
	File    string          `json:"file"`
	From    string          `json:"from"`
	Verdict signing.Verdict `json:"verdict"`
}

// Audit is what an audit of a channel found: how many messages got each
// verdict, the forged messages, and the claims, reply tokens and seen
// files forged in an agent's name (what someone writes to keep that
// agent from answering).
type Audit struct {
	Channel   string            `json:"channel"`
	Messages  int               `json:"messages"`
	Verdicts  map[string]int    `json:"verdicts"`
	Forgeries []Forgery         `json:"forgeries"`
	Claims    []delivery.Forged `json:"forged_claims"`
	// ClaimsErr is why the claims could not all be checked; "" when they
	// were.
	ClaimsErr string `json:"-"`
}

// Audit checks the signature of every message of a channel against the
// Verifier (Config.Verifier), and its claims (delivery.Audit).
func (m *Mount) Audit(_ context.Context, req AuditRequest) (Audit, error) {
	if err := tree.CheckName("channel", req.Channel); err != nil {
		return Audit{}, errkind.Wrap(errkind.Invalid, err)
	}
	skipped := req.Skipped
	if skipped == nil {
		skipped = func(s channel.Skip) { m.cfg.Logger.Warn("audit: skipped", "channel", req.Channel, "file", s.String()) }
	}
	msgs, skips, err := channel.ReadAll(m.cfg.Root, req.Channel, channel.ReaderOptions{Retries: 1})
	if err != nil {
		return Audit{}, errkind.Wrap(errkind.Of(err), err)
	}
	for _, s := range skips {
		skipped(s)
	}
	if req.Archive {
		old, skips, err := channel.ReadArchive(m.cfg.Root, req.Channel, channel.ReaderOptions{})
		if err != nil {
			return Audit{}, errkind.Wrap(errkind.Of(err), err)
		}
		for _, s := range skips {
			skipped(s)
		}
		msgs = append(old, msgs...)
	}
	v := m.cfg.Verifier
	out := Audit{Channel: req.Channel, Messages: len(msgs), Verdicts: map[string]int{}, Forgeries: []Forgery{}}
	for i := range msgs {
		msg := &msgs[i]
		verdict := msg.Verify(v, req.Channel)
		out.Verdicts[verdict.String()]++
		if v.Forged(msg.From, verdict) {
			out.Forgeries = append(out.Forgeries, Forgery{msg.ID, msg.File, msg.From, verdict})
		}
	}
	claims, err := delivery.Audit(m.cfg.Root, req.Channel, v)
	if err != nil {
		out.ClaimsErr = fmt.Sprint(err)
	}
	if claims == nil {
		claims = []delivery.Forged{}
	}
	out.Claims = claims
	return out, nil
}

// MinArchiveAge is the youngest a message may be to be archived: watchers
// may not have seen newer ones.
const MinArchiveAge = time.Hour

// Archive moves the channel's messages named more than olderThan ago
// (at least MinArchiveAge), unchanged, into its archive folder
// (channel.Archive), and returns how many it moved, also when it fails
// part way.
func (m *Mount) Archive(_ context.Context, ch string, olderThan time.Duration) (int, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return 0, errkind.Wrap(errkind.Invalid, err)
	}
	if olderThan < MinArchiveAge {
		return 0, errkind.New(errkind.Invalid, "--older-than must be at least %s (watchers may not have seen newer messages)", "1h")
	}
	n, err := channel.Archive(m.cfg.Root, ch, m.cfg.Now().Add(-olderThan))
	if err != nil {
		return n, errkind.Wrap(errkind.Of(err), err)
	}
	return n, nil
}
