package delivery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Expired is the state of a message nobody claimed within its expiry
// (see "Delivery reports" in the package doc): it may still be claimed
// and answered later, and then its state moves on.
const Expired = "expired"

// KindReport is the kind of the report mark, ROOT/claims/C/A/M.report,
// and of its signature.
const KindReport = "report"

// Report is what a delivery report says: the extension
// channel.ExtDeliveryReport of the report message, and the body of its
// mark.
type Report struct {
	Message   string `json:"message"`          // the original's id
	Channel   string `json:"channel"`          // its channel
	Agent     string `json:"agent"`            // the addressee
	State     string `json:"state"`            // refused, failed, undeliverable, expired
	Guard     string `json:"guard,omitempty"`  // refused: which guard
	Reason    string `json:"reason,omitempty"` // why, in a few words
	DecidedBy string `json:"decided_by"`       // the agent (or bridge) that decided
	Host      string `json:"host,omitempty"`   // its host
}

// ReportMark is the content of a report mark: the report, the id chosen
// for its message before it is posted, when, and the decider's signature.
type ReportMark struct {
	Report
	ID        string             `json:"report"`
	Time      time.Time          `json:"time"`
	Signature *signing.Signature `json:"signature,omitempty"`
}

// Payload returns the bytes the signature of k covers: kind "report",
// then channel, agent, message, report id, state, guard, reason,
// decided_by, host and time (RFC3339Nano, UTC).
func (k ReportMark) Payload() []byte {
	return signing.Payload(KindReport, k.Channel, k.Agent, k.Message, k.ID, k.State, k.Guard, k.Reason,
		k.DecidedBy, k.Host, k.Time.UTC().Format(time.RFC3339Nano))
}

// maxReason bounds the reason a report carries.
const maxReason = 400

// Check validates r as read from a file or a message: its names, a bad
// state, a known guard, bounded text.
func (r Report) Check() error {
	for _, n := range []struct{ kind, v string }{{"channel", r.Channel}, {"agent", r.Agent}, {"message id", r.Message}} {
		if err := tree.CheckName(n.kind, n.v); err != nil {
			return err
		}
	}
	if r.DecidedBy == "" || len(r.DecidedBy) > 200 || len(r.Host) > 255 || len(r.Reason) > maxReason+len("…") {
		return errors.New("delivery: bad report")
	}
	if !Bad(r.State) {
		return fmt.Errorf("delivery: a report of state %q", r.State)
	}
	if (r.State == Refused) != (r.Guard != "") {
		return errors.New("delivery: a guard names a refusal, and only a refusal")
	}
	return nil
}

// ParseReport reads the delivery report extension of m, a report message
// (ok false for any other message, or an extension that does not check).
func ParseReport(m *channel.Message) (Report, bool) {
	raw, ok := m.Extension(channel.ExtDeliveryReport)
	if !ok || len(raw) > maxSeen {
		return Report{}, false
	}
	var r Report
	if json.Unmarshal(raw, &r) != nil || r.Check() != nil {
		return Report{}, false
	}
	return r, true
}

// Reportable reports whether a report may be sent on m: never on a
// report, a guard notice or a question, and only to a sender that can be
// addressed.
func Reportable(m *channel.Message) bool {
	return !m.IsDeliveryReport() && !IsNotice(m) && !m.IsQuestion() && tree.ValidName(m.From) &&
		m.From != channel.Broadcast
}

// ReportText is the human text of a report r on a message (its id in r).
func ReportText(r Report) string {
	what := ""
	switch r.State {
	case Refused:
		what = "was refused by " + r.Guard
	case Failed:
		what = "failed"
	case Undeliverable:
		what = "is undeliverable"
	case Expired:
		what = "expired"
	default:
		what = "is " + r.State
	}
	text := fmt.Sprintf("[collab] your message %s to %s %s", r.Message, r.Agent, what)
	if r.Reason != "" {
		text += ": " + r.Reason
	}
	return text + "."
}

// plain makes s fit a report's reason: one line, no @mention, bounded.
func plain(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ", "@", `\x40`).Replace(tree.Printable(s))
	if len(s) > maxReason {
		n := maxReason
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// Reporter sends delivery reports: the decider of a final bad state (a
// watcher, a bridge) holds one.
type Reporter struct {
	Root tree.Root
	// Dirs opens the addressee's claims folders, where the mark goes;
	// default claim.Files{Root}.
	Dirs   claim.Dirs
	Agent  string          // who posts: the decider's agent
	Host   string          // the decider's host
	Signer *signing.Signer // signs the mark and the report (Agent's key); nil: unsigned
	// Post posts a report message under its preset id, failing with an
	// error wrapping fs.ErrExist when the id is taken; default a
	// channel.Writer of Root signed by Signer.
	Post func(*channel.Message) error
	Now  func() time.Time // default time.Now
}

// Send reports r (r.Message, a message of r.Channel, is m) to m's sender,
// once per message and addressee whoever calls it and however often:
//
//  1. the mark ROOT/claims/C/A/M.report, naming the id chosen for the
//     report, is published without replacing: the first decider's stays;
//  2. the report is posted under the mark's id, without replacing.
//
// A decider that finds the mark (it lost the race, or an earlier run was
// killed between the two steps) posts under the mark's id what the mark
// says: there is never a second id, so never a second report. Send
// returns the report's id; "" and nil when m takes no report.
func (rp *Reporter) Send(m *channel.Message, r Report) (string, error) {
	if !Reportable(m) || m.From == r.Agent {
		return "", nil
	}
	r.Channel, r.Message, r.Reason = m.SessionID, m.Key(), plain(r.Reason)
	r.DecidedBy, r.Host = rp.Agent, rp.Host
	if err := r.Check(); err != nil {
		return "", err
	}
	mark, err := rp.mark(r)
	if err != nil {
		return "", err
	}
	return mark.ID, rp.post(m, mark)
}

func (rp *Reporter) now() time.Time {
	if rp.Now != nil {
		return rp.Now().UTC()
	}
	return time.Now().UTC()
}

// mark publishes the mark of r, or returns the one already there.
func (rp *Reporter) mark(r Report) (ReportMark, error) {
	dirs := rp.Dirs
	if dirs == nil {
		dirs = claim.Files{Root: rp.Root}
	}
	d, err := dirs.OpenClaims(r.Channel, r.Agent, true)
	if err != nil {
		return ReportMark{}, fmt.Errorf("report %s: %w", r.Message, err)
	}
	defer d.Close()
	now := rp.now()
	k := ReportMark{Report: r, ID: channel.NewID(rp.Agent, now, randhex.String(2)), Time: now}
	k.Signature = rp.Signer.Sign(k.Payload())
	data, err := json.Marshal(k)
	if err != nil {
		return ReportMark{}, err
	}
	err = d.Publish(markName(KindReport, r.Message), data, 0o666)
	if err == nil {
		return k, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return ReportMark{}, fmt.Errorf("report %s: %w", r.Message, err)
	}
	raw, _, err := d.ReadFile(markName(KindReport, r.Message), maxSeen)
	if err != nil {
		return ReportMark{}, fmt.Errorf("report %s: %w", r.Message, err)
	}
	return parseMark(raw, r.Channel, r.Agent, r.Message)
}

// parseMark reads a report mark of message id of ch in agent's folder.
func parseMark(raw []byte, ch, agent, id string) (ReportMark, error) {
	var k ReportMark
	if err := json.Unmarshal(raw, &k); err != nil {
		return ReportMark{}, fmt.Errorf("report mark %s: %w", id, err)
	}
	if k.Channel != ch || k.Agent != agent || k.Message != id {
		return ReportMark{}, fmt.Errorf("report mark %s: names another message", id)
	}
	if _, err := channel.ParseID(k.ID); err != nil {
		return ReportMark{}, fmt.Errorf("report mark %s: report id: %w", id, err)
	}
	if err := k.Check(); err != nil {
		return ReportMark{}, fmt.Errorf("report mark %s: %w", id, err)
	}
	return k, nil
}

// post posts the report k names, in reply to m, under k's id; one
// already there is success.
func (rp *Reporter) post(m *channel.Message, k ReportMark) error {
	n := ReportMessage(m, k, rp.Agent, rp.Host)
	post := rp.Post
	if post == nil {
		post = (&channel.Writer{Root: rp.Root, Signer: rp.Signer}).Post
	}
	err := post(&n)
	if !errors.Is(err, fs.ErrExist) {
		if err != nil {
			return fmt.Errorf("post report %s: %w", k.ID, err)
		}
		return nil
	}
	there, lerr := channel.Lookup(rp.Root, m.SessionID, k.ID)
	if lerr == nil && (!there.IsDeliveryReport() || there.Metadata.InReplyTo != k.Message) {
		return fmt.Errorf("post report %s: the id is another message's", k.ID)
	}
	return nil
}

// ReportMessage is the report k names on m, posted by agent on host: in
// m's channel and thread, in reply to m, to its sender, under k's id and
// dated by k (a report posted again after a crash is the same message).
func ReportMessage(m *channel.Message, k ReportMark, agent, host string) channel.Message {
	n := channel.Message{
		ID: k.ID, Timestamp: k.Time.UTC().Format(channel.TimeFormat),
		SessionID: m.SessionID, From: agent, To: m.From, Type: channel.TypeDeliveryReport,
		Content: channel.Content{Text: ReportText(k.Report)},
		Metadata: channel.Metadata{
			Mode: channel.ModeWatcher, Turn: agent, Hops: m.Metadata.Hops + 1, Host: host,
		},
	}
	n.SetParent(m)
	raw, _ := json.Marshal(k.Report)
	n.SetExtension(channel.ExtDeliveryReport, raw)
	return n
}

// ReadReport reads the report mark of message id of channel ch for
// agent: the report's id (ID), what it reports and when it was decided.
// It does not say whether the report is posted yet; fs.ErrNotExist when
// there is no mark. The signature is not judged here
// (ReportMark.Verify).
func ReadReport(root tree.Root, ch, agent, id string) (ReportMark, error) {
	for _, n := range []struct{ kind, v string }{{"channel", ch}, {"agent", agent}, {"message id", id}} {
		if err := tree.CheckName(n.kind, n.v); err != nil {
			return ReportMark{}, err
		}
	}
	raw, err := readMarkFile(root, KindReport, ch, agent, id)
	if err != nil {
		return ReportMark{}, err
	}
	return parseMark(raw, ch, agent, id)
}

// Verify returns the verdict on k's signature as its decider's.
func (k ReportMark) Verify(v *signing.Verifier) signing.Verdict {
	if k.Signature == nil {
		return signing.Unsigned
	}
	return v.VerifyNamed(k.DecidedBy, claim.MessageTime(k.Message), k.Time, k.Payload(), k.Signature)
}
