package watcher

import (
	"fmt"
	"slices"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
)

// A message addressed to the agent is checked against the trust policy
// (Config.Trust) before anything is done with it: no claim, no CLI run for
// one the policy refuses. Only such messages are checked: the rest of a
// busy channel costs no cryptography. A refused message is logged and
// reported once in its channel by a guard notice (guardTrust) that answers
// it (in_reply_to): no watcher answers a notice, and a restart or a rescan
// that reads the notice again does not report the message twice.

// guardTrust names the trust policy in the notice that reports a refused
// message.
const guardTrust = "trust"

// admit reports whether the trust policy lets the watcher act on it, a
// message addressed to its agent, and records the verdict on its
// signature. A message refused is logged and kept to be reported after
// the scan.
func (w *watcher) admit(it *item) bool {
	if w.cfg.Trust == signing.Any {
		return true
	}
	m := &it.msg
	it.verdict = m.Verify(w.cfg.Verifier, m.SessionID)
	if w.cfg.Verifier.Accepts(w.cfg.Trust, m.From, it.verdict) {
		return true
	}
	w.log.Warn("forged message ignored", keyMsg, m.ID, keyChannel, m.SessionID, keyFrom, m.From,
		keyVerdict, it.verdict.String(), keyTrust, string(w.cfg.Trust))
	w.forged = append(w.forged, it)
	why := w.forgedWhy(m.From, it.verdict)
	w.markSeen(m, guardTrust, why)
	w.bounce(m, delivery.Refused, guardTrust, why)
	return false
}

// reportForged posts one notice for each message refused in this poll,
// unless the channel already holds one (read in this poll or before).
func (w *watcher) reportForged() {
	for _, it := range w.forged {
		m := &it.msg
		r := ref{m.SessionID, m.ID}
		if _, done := w.replied[r]; done {
			continue
		}
		n := m.Reply(w.cfg.Agent, w.cfg.Host)
		// m.ID is its file's name (the scan sets it), a checked name;
		// the sender is its word, quoted by forgedWhy.
		setNotice(&n, guardTrust, fmt.Sprintf("[collab] %s ignored %s: %s.", w.cfg.Agent, m.ID, w.forgedWhy(m.From, it.verdict)))
		if err := w.postFile(&n); err != nil {
			w.log.Error("cannot report a forged message", keyMsg, m.ID, keyErr, err)
			continue
		}
		w.replied[r] = n.ID
	}
	clear(w.forged)
	w.forged = w.forged[:0]
}

// forgedFile is a forged claim, reply token or kill request: what it is,
// in which channel, of which message or job, in whose name.
type forgedFile struct {
	channel, id, what, from string
	verdict                 signing.Verdict
}

// forgedFile queues a forged file found by the claim store or the kill
// check to be reported in its channel; any goroutine may call it.
func (w *watcher) forgedFile(ch, id, what, from string, v signing.Verdict) {
	w.forgedMu.Lock()
	defer w.forgedMu.Unlock()
	if len(w.forgedFiles) < maxForgedReports {
		w.forgedFiles = append(w.forgedFiles, forgedFile{ch, id, what, from, v})
	}
}

// maxForgedReports bounds the forged files reported in one poll; the rest
// are in the log.
const maxForgedReports = 16

// reportForgedFiles posts one notice (to all, mode watcher: no watcher
// answers it) for each forged file not reported yet by this watcher. The
// notice answers nothing, so it cannot mark a message answered.
func (w *watcher) reportForgedFiles() {
	w.forgedMu.Lock()
	files := w.forgedFiles
	w.forgedFiles = nil
	w.forgedMu.Unlock()
	for _, f := range files {
		if w.reportedFiles[f] || !slices.Contains(w.cfg.Channels, f.channel) {
			continue
		}
		n := channel.Message{SessionID: f.channel, From: w.cfg.Agent}
		n.Metadata.Mode, n.Metadata.Host = channel.ModeWatcher, w.cfg.Host
		// f.id is a message's file name or the running job's id, both
		// checked names; the sender is the file's word, quoted by
		// forgedWhy.
		setNotice(&n, guardTrust, fmt.Sprintf("[collab] %s ignored a %s for %s: %s.", w.cfg.Agent, f.what, f.id, w.forgedWhy(f.from, f.verdict)))
		if err := w.postFile(&n); err != nil {
			w.log.Error("cannot report a forged "+f.what, keyMsg, f.id, keyErr, err)
			continue
		}
		if w.reportedFiles == nil {
			w.reportedFiles = make(map[forgedFile]bool)
		}
		w.reportedFiles[f] = true
	}
}

// forgedWhy says why a message that names from as its sender, with
// verdict, was refused. from is the sender's word, quoted (channel.Quote):
// the reason goes into a notice, a seen file and a claim that the watcher
// signs, and must not add lines to them or @mention anyone.
func (w *watcher) forgedWhy(from string, v signing.Verdict) string {
	q := channel.Quote(from)
	switch v {
	case signing.Unsigned:
		if w.cfg.Trust == signing.Signed {
			return fmt.Sprintf("it names %s as its sender but is not signed, and this watcher acts only on verified senders (%s; --trust %s)", q, v, signing.Signed)
		}
		return fmt.Sprintf("it names %s as its sender but is not signed, and %s has a trusted key (%s)", q, q, v)
	case signing.UnknownKey:
		return fmt.Sprintf("it names %s as its sender but is signed with a key that is not one of %s's trusted keys (%s)", q, q, v)
	case signing.RevokedKey:
		return fmt.Sprintf("it names %s as its sender but is signed with a key of %s's revoked before it was sent (%s)", q, q, v)
	default:
		return fmt.Sprintf("it names %s as its sender but its signature does not verify (%s)", q, v)
	}
}

// ownReply reports whether m, a reply in the agent's own name, may be
// taken as the agent's: under trust any, or when the agent has no key,
// always; otherwise only when it verifies. A forged reply in the agent's
// name would otherwise mark the message it answers as answered, and the
// watcher would never answer it.
func (w *watcher) ownReply(m *channel.Message) bool {
	if w.cfg.Trust == signing.Any || !w.cfg.Verifier.HasKeys(m.From) {
		return true
	}
	v := m.Verify(w.cfg.Verifier, m.SessionID)
	if v == signing.Verified {
		return true
	}
	w.log.Warn("forged reply in this agent's name ignored", keyMsg, m.ID, keyChannel, m.SessionID,
		keyReply, m.Metadata.InReplyTo, keyVerdict, v.String())
	return false
}

// trustedOnly leaves out of a prompt's context the messages of channel ch
// that the trust policy refuses: a forgery the watcher would not act on
// must not reach the model as what its sender said either. It runs as a
// job starts, on the few messages of its context.
func (w *watcher) trustedOnly(msgs []channel.Message, ch string) []channel.Message {
	if w.cfg.Trust == signing.Any {
		return msgs
	}
	out := msgs[:0:0]
	for i := range msgs {
		m := &msgs[i]
		if v := m.Verify(w.cfg.Verifier, ch); w.cfg.Verifier.Accepts(w.cfg.Trust, m.From, v) {
			out = append(out, *m)
		} else {
			w.log.Debug("left out of the context", keyMsg, m.ID, keyFrom, m.From, keyVerdict, v.String())
		}
	}
	return out
}

// answerTrusted reports whether the answer in it may be taken as asker's:
// under trust any, always; otherwise when the asker has no key (anyone
// who can write the tree can answer for it: said at start) or the answer
// verifies as the asker's.
func (w *watcher) answerTrusted(it *item, asker string) bool {
	return w.cfg.Trust == signing.Any || !w.cfg.Verifier.HasKeys(asker) || it.verdict == signing.Verified
}

// warnTrust says at start what the signatures do not protect: the
// watcher's own messages without a key, and answers to its permission
// questions from senders without a key.
func (w *watcher) warnTrust() {
	a := w.cfg.Agent
	if w.cfg.Signer == nil && !w.cfg.KeysNoticed {
		w.log.Warn(fmt.Sprintf("no key for %s: its messages are unsigned, so under --trust known or signed they can be forged; make one with 'collab key new --agent %s', then an admin runs 'collab key trust %s PUBKEY'", a, a, a),
			keyTrust, string(w.cfg.Trust))
	}
	if s := w.cfg.Signer; s != nil && w.cfg.Verifier != nil {
		// Sign and check a probe: the key is the agent's in the keyring
		// (and not revoked) or readers cannot verify what it signs.
		p := signing.Payload("probe", a)
		if v := w.cfg.Verifier.Verify(a, w.now(), p, s.Sign(p)); v != signing.Verified {
			w.log.Warn(fmt.Sprintf("the key of %s is not trusted in the keyring, so readers cannot verify its messages; an admin runs 'collab key trust %s %s'", a, a, s.PublicKey()),
				keyVerdict, v.String())
		}
	}
	switch w.cfg.Trust {
	case signing.Any:
		w.log.Warn("trust any: messages and answers to permission questions are taken at their word; anyone who can write the tree can answer for anyone",
			keyTrust, string(w.cfg.Trust))
	case signing.Known:
		if w.cfg.KeysNoticed {
			break
		}
		w.log.Warn("permission questions to senders without a key can be answered by anyone who can write the tree; give a sender a key with 'collab key new --agent NAME', then an admin runs 'collab key trust NAME PUBKEY'",
			keyTrust, string(w.cfg.Trust))
	}
}

// warnAsker warns when the watcher asks a permission question of a sender
// whose answer it cannot check.
func (w *watcher) warnAsker(m *channel.Message) {
	if w.cfg.Trust == signing.Any || w.cfg.Verifier.HasKeys(m.From) {
		return
	}
	w.log.Warn("permission question to a sender without a key: anyone who can write the tree can answer it", keyMsg, m.ID, keyAsker, m.From)
}
