package watcher

import (
	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/prompt"
	"github.com/collabdev/collab/internal/identity/lookalike"
)

// A prompt names each message's sender with what the watcher found of it
// (prompt.Message.Sender): the verdict on its signature, whether it is
// forged, and the keyed agent whose name its sender's passes for ("Alice"
// for alice, package lookalike). The model then reads "From: alice
// (verified)", "From: bob (unsigned)" or "From: Alice (unsigned; NOT the
// keyed agent alice)" instead of the same "From: alice" for all. What
// the trust policy refuses is left out of the context before (trustedOnly);
// under --trust any a forgery stays, marked FORGED.

// senders returns msgs, read from channel ch, as a prompt shows them;
// keyed are the agents with keys.
func (w *watcher) senders(msgs []channel.Message, ch string, keyed []string) []prompt.Message {
	out := make([]prompt.Message, len(msgs))
	for i := range msgs {
		out[i] = w.sender(&msgs[i], ch, keyed)
	}
	return out
}

// sender returns m, read from channel ch, as a prompt shows it. It checks
// m's signature (the Verifier remembers checks that passed, so a message
// trustedOnly checked costs no second verification).
func (w *watcher) sender(m *channel.Message, ch string, keyed []string) prompt.Message {
	v := m.Verify(w.cfg.Verifier, ch)
	return prompt.Message{
		Message:   *m,
		Verdict:   v.String(),
		Forged:    w.cfg.Verifier.Forged(m.From, v),
		LooksLike: lookalike.Of(m.From, keyed),
	}
}
