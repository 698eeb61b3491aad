package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Subject prefix, queue group and version of the protocol.
const (
	// SubjectPrefix is the first three tokens of every request subject.
	SubjectPrefix = "collab.bridge.v1"
	// SubscribeSubject is what a bridge subscribes: every op of every agent.
	SubscribeSubject = SubjectPrefix + ".*.*"
	// QueueGroup is the queue group every bridge joins, so each request is
	// served by one bridge.
	QueueGroup = "collab-bridge"
	// InboxPrefixFormat is the reply inbox prefix of a remote agent's
	// client (nats.CustomInboxPrefix): fmt.Sprintf(InboxPrefixFormat, agent).
	InboxPrefixFormat = "_INBOX.collab.%s"
)

// Ops, the OP token of a request subject.
const (
	OpPost     = "post"
	OpPresence = "presence"
	OpRead     = "read"
	OpWho      = "who"
	OpStatus   = "status"
	OpKill     = "kill"
)

// Ops lists every op of protocol v1.
var Ops = []string{OpPost, OpPresence, OpRead, OpWho, OpStatus, OpKill, OpClaimFS, OpKeys, OpKills, OpDoc, OpTask}

// KnownOp reports whether op is one of [Ops].
func KnownOp(op string) bool {
	for _, o := range Ops {
		if o == op {
			return true
		}
	}
	return false
}

// RequestSubject returns the subject on which agent sends op.
func RequestSubject(op, agent string) string {
	return SubjectPrefix + "." + op + "." + agent
}

// InboxPrefix returns agent's reply inbox prefix (see [InboxPrefixFormat]).
func InboxPrefix(agent string) string { return fmt.Sprintf(InboxPrefixFormat, agent) }

// ParseSubject splits a request subject into its op and agent. The op must
// be known and the agent a valid tree name.
func ParseSubject(subject string) (op, agent string, err error) {
	rest, ok := strings.CutPrefix(subject, SubjectPrefix+".")
	if !ok {
		return "", "", fmt.Errorf("bridge: subject %q: not %s.OP.AGENT", subject, SubjectPrefix)
	}
	op, agent, ok = strings.Cut(rest, ".")
	if !ok || strings.Contains(agent, ".") {
		return "", "", fmt.Errorf("bridge: subject %q: not %s.OP.AGENT", subject, SubjectPrefix)
	}
	if !KnownOp(op) {
		return "", "", fmt.Errorf("bridge: subject %q: unknown op %q", subject, op)
	}
	if err := tree.CheckName("agent", agent); err != nil {
		return "", "", fmt.Errorf("bridge: subject %q: %w", subject, err)
	}
	return op, agent, nil
}

// Requests. Every body is a JSON object; unknown fields are refused.

// PostRequest posts one message. Message is the message file's JSON, signed
// by the acting agent; its session_id must be Channel and its from the agent.
type PostRequest struct {
	Channel string          `json:"channel"`
	Message json.RawMessage `json:"message"`
}

// PostReply answers a post: the message id; Existed when the same message
// was already there (a retry).
type PostReply struct {
	Reply
	ID      string `json:"id,omitempty"`
	Existed bool   `json:"existed,omitempty"`
}

// PresenceRequest writes the acting agent's presence. Presence is the
// presence file's JSON, signed by the agent.
type PresenceRequest struct {
	Presence json.RawMessage `json:"presence"`
}

// PresenceReply answers a presence request.
type PresenceReply struct {
	Reply
}

// ReadRequest reads a channel's messages after the message After in
// channel order, at most Limit (0: [DefaultReadLimit]; more than
// [MaxReadLimit] is MaxReadLimit); More says that messages after the last
// one returned were left out (page on with its id). An empty After reads
// the newest Limit messages instead (as `collab read --limit`), after
// Since when given: a message id or an ISO-8601 time, as
// [channel.NewestSince] takes it (what MCP's channel_read takes); More
// then says that older ones (after Since) were left out, by Limit or by
// the reply's size, which keeps the newest. After and Since together are
// invalid.
type ReadRequest struct {
	Channel string `json:"channel"`
	After   string `json:"after,omitempty"`
	Since   string `json:"since,omitempty"`
	Limit   int    `json:"limit,omitempty"`
}

// Read limits.
const (
	DefaultReadLimit = 50
	MaxReadLimit     = 500
)

// ReadReply answers a read: the messages in the channel's order, each the
// file's JSON, or an [Omitted] stand-in for a message too big for a reply.
// More says there are messages after the last one returned.
type ReadReply struct {
	Reply
	Messages []json.RawMessage `json:"messages"`
	More     bool              `json:"more"`
}

// Omitted stands in a [ReadReply] for a message too big for a reply; read
// it on the mount.
type Omitted struct {
	ID      string `json:"id"`
	Omitted string `json:"omitted"`
}

// WhoRequest asks for the agents, as `collab who --json` lists them.
type WhoRequest struct{}

// WhoReply answers who: Agents is what `collab who --json` prints.
type WhoReply struct {
	Reply
	Agents json.RawMessage `json:"agents"`
}

// StatusRequest asks for a message's delivery status.
type StatusRequest struct {
	Message string `json:"message"`
}

// StatusReply answers status: Status is what `collab status --json` prints
// for the message.
type StatusReply struct {
	Reply
	Status json.RawMessage `json:"status"`
}

// KillRequest asks agent Of's watcher to kill job Job. Kill is the kill
// file's JSON, signed by the acting agent (the asker).
type KillRequest struct {
	Of   string          `json:"of"`
	Job  string          `json:"job"`
	Kill json.RawMessage `json:"kill"`
}

// KillReply answers kill.
type KillReply struct {
	Reply
}

// Error codes of a failed request.
const (
	CodeInvalid     = "invalid"     // bad request: do not retry
	CodeForbidden   = "forbidden"   // not this agent's, or signature not verified: do not retry
	CodeConflict    = "conflict"    // a different file already has that name: do not retry
	CodeNotFound    = "not-found"   // no such channel, message or agent
	CodeUnavailable = "unavailable" // the tree cannot be written now: retry later
	CodeInternal    = "internal"    // the bridge failed otherwise
)

// Retryable reports whether a request refused with code may succeed when
// sent again later. A request with no reply at all (no bridge, timeout) is
// retryable too.
func Retryable(code string) bool {
	switch code {
	case CodeUnavailable, CodeInternal:
		return true
	}
	return false
}

// Reply is the common part of every reply: OK, or Code and Error.
type Reply struct {
	OK    bool   `json:"ok"`
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// Err returns the reply's failure as an [*Error], nil when OK.
func (r Reply) Err() error {
	if r.OK {
		return nil
	}
	code := r.Code
	if code == "" {
		code = CodeInternal
	}
	return &Error{Code: code, Msg: r.Error}
}

// Error is a refused request.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return "bridge: " + e.Code + ": " + e.Msg }

// Kind is the service layer's kind of a refusal with this code: the
// remote client's reading of the wire, the inverse of wireCode.
func (e *Error) Kind() errkind.Kind {
	switch e.Code {
	case CodeInvalid:
		return errkind.Invalid
	case CodeNotFound:
		return errkind.NotFound
	case CodeConflict:
		return errkind.Conflict
	case CodeForbidden:
		return errkind.Forbidden
	case CodeUnavailable:
		return errkind.Unavailable
	}
	return errkind.Failed
}

// wireCode is the bridge door's one mapping of the service layer's error
// kinds to codes on the wire (see package service); a kind a remote
// client cannot act on is internal. Unavailable and Timeout are worth a
// retry.
func wireCode(k errkind.Kind) string {
	switch k {
	case errkind.Timeout:
		return CodeUnavailable
	case errkind.Invalid:
		return CodeInvalid
	case errkind.NotFound:
		return CodeNotFound
	case errkind.Conflict:
		return CodeConflict
	case errkind.Forbidden:
		return CodeForbidden
	case errkind.Unavailable:
		return CodeUnavailable
	}
	return CodeInternal
}

// Retryable reports whether the request may succeed when sent again.
func (e *Error) Retryable() bool { return Retryable(e.Code) }

// Failure returns the reply of a request refused with err: its code when
// err wraps an [*Error], else [CodeInternal].
func Failure(err error) Reply {
	var e *Error
	if errors.As(err, &e) {
		return Reply{Code: e.Code, Error: e.Msg}
	}
	return Reply{Code: CodeInternal, Error: err.Error()}
}

// Errorf returns an [*Error] with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// DecodeRequest decodes a request body into v (a pointer to one of the
// request structs): one JSON object, unknown fields refused, nothing after
// it. An empty body is an empty object. The error is an [*Error] with
// [CodeInvalid].
func DecodeRequest(data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		data = []byte("{}")
	}
	if data[0] != '{' {
		return Errorf(CodeInvalid, "body: not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(CodeInvalid, "body: %v", err)
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return Errorf(CodeInvalid, "body: data after the JSON object")
	}
	return nil
}
