package channel

import (
	"encoding/json"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// The metadata extensions collab writes (docs/protocol.md#messages lets metadata carry more
// fields; old readers keep them verbatim). Each key has one constant.
const (
	// ExtAwaitReply marks a message whose reply a running process waits
	// for (send --wait, the MCP send_and_wait tool): "await_reply": true.
	ExtAwaitReply = "await_reply"
	// ExtDeliveryReport carries what a delivery report reports
	// ([TypeDeliveryReport]; its fields: package delivery's Report).
	ExtDeliveryReport = "delivery_report"
	// ExtExpireAfter is how long a message may wait unclaimed before its
	// sender gets a report that it expired: a Go duration ("10m"), set
	// by its sender (collab send --expire-after).
	ExtExpireAfter = "expire_after"
)

// TypeQuestion is the type of a question a watcher posts while the run it
// asks for waits (a live session's permission request): it is in reply
// to the message the run answers, but it is not the answer: a wait for
// the reply passes over it ([Message.IsQuestion]).
const TypeQuestion = "question"

// IsQuestion reports whether m is a question asked mid-run
// ([TypeQuestion]) rather than an answer to the message it replies to.
func (m *Message) IsQuestion() bool { return m.Type == TypeQuestion }

// TypeDeliveryReport is the type of a delivery report (a "bounce"): the
// notice, to a message's sender and in reply to it, that the message
// reached a final bad state for one addressee (refused, failed,
// undeliverable, expired). No watcher answers one, no waiter takes one
// as the reply, and none is ever reported on ([Message.IsDeliveryReport]).
const TypeDeliveryReport = "delivery_report"

// IsDeliveryReport reports whether m is a delivery report: its type says
// so ([TypeDeliveryReport], covered by its signature), or it carries the
// [ExtDeliveryReport] extension as its sender signed it.
func (m *Message) IsDeliveryReport() bool {
	if m.Type == TypeDeliveryReport {
		return true
	}
	_, ok := m.Extension(ExtDeliveryReport)
	return ok
}

// Modes a message's metadata.mode takes.
const (
	ModeChat    = "chat"    // a person or script (send); the default
	ModeWatcher = "watcher" // a watcher's reply or notice
	ModeMCP     = "mcp"     // an agent's tool call (collab mcp)
)

// SetParent makes m a reply to parent: in_reply_to is parent's id and the
// thread is parent's thread.
func (m *Message) SetParent(parent *Message) {
	m.Metadata.InReplyTo = parent.ID
	m.Metadata.Thread = parent.ThreadID()
}

// Reply returns the message a watcher posts from agent on host in answer
// to m: in m's channel and thread, in reply to m, one hop deeper, mode
// "watcher", type "chat", addressed to m's sender, or to everyone when
// that sender's name cannot be addressed (a foreign writer's). The caller
// fills in the content and any extension.
func (m *Message) Reply(agent, host string) Message {
	r := Message{
		SessionID: m.SessionID,
		From:      agent,
		To:        m.From,
		Type:      "chat",
		Metadata: Metadata{
			Mode: ModeWatcher,
			Turn: agent,
			Hops: m.Metadata.Hops + 1,
			Host: host,
		},
	}
	if !tree.ValidName(m.From) {
		r.To = Broadcast
	}
	r.SetParent(m)
	return r
}

// SetAwaitReply marks m as awaited ([ExtAwaitReply]).
func (m *Message) SetAwaitReply() { m.SetExtension(ExtAwaitReply, json.RawMessage("true")) }

// AwaitsReply reports whether m is marked as awaited ([ExtAwaitReply]),
// by its sender when it is signed ([Message.Extension]).
func (m *Message) AwaitsReply() bool {
	v, ok := m.Extension(ExtAwaitReply)
	return ok && string(v) == "true"
}

// SetExtension sets metadata extension key to the JSON value v.
func (m *Message) SetExtension(key string, v json.RawMessage) {
	if m.Metadata.Extra == nil {
		m.Metadata.Extra = map[string]json.RawMessage{}
	}
	m.Metadata.Extra[key] = v
}
