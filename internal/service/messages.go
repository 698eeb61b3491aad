package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/delegate"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

// Messages is the operations on post, read and follow a channel, status, wait for a reply, who (see the package doc).
type Messages interface {
	// Post posts a message as the actor (see [PostRequest] for the rules).
	Post(ctx context.Context, a Actor, req PostRequest) (Posted, error)
	// Status is where a message stands for each agent it is addressed to.
	Status(ctx context.Context, req StatusRequest) (delivery.Status, error)
	// Delivery is Status of a message already read, m of channel ch (a
	// page's): a broadcast's has no addressee; what cannot be known now
	// (a bridge away) is an empty status.
	Delivery(ctx context.Context, ch string, m *channel.Message) delivery.Status
	// Who is the who board: the agents, from their heartbeats and the
	// registry, sorted by name.
	Who(ctx context.Context, req WhoRequest) ([]delivery.AgentRow, error)
	// Read returns a page of a channel's messages (see [ReadRequest]).
	// A channel with no folder is NotFound (but see EmptyIfMissing),
	// its error naming the channels there are: a mistyped name is not an
	// empty channel.
	Read(ctx context.Context, req ReadRequest) (Page, error)
	// ExpectReply prepares, before a request is posted on channel ch,
	// the wait for its reply (see [Waiter]).
	ExpectReply(ctx context.Context, ch string) (Waiter, error)
	// WaitReply waits for the reply to message id of channel ch, posted
	// already (collab wait).
	WaitReply(ctx context.Context, ch, id string, opt delegate.Options) (channel.Message, error)
	// Follow calls fn with a channel's new messages as they come, until
	// ctx ends (see [FollowRequest]).
	Follow(ctx context.Context, req FollowRequest, fn func([]channel.Message) error) error
	// Audit checks the signatures of a channel's messages and claims
	// (see [AuditRequest]); the mount's only.
	Audit(ctx context.Context, req AuditRequest) (Audit, error)
	// Archive moves a channel's old messages into its archive; the
	// mount's only.
	Archive(ctx context.Context, ch string, olderThan time.Duration) (int, error)
}

// PostRequest is what to post. The rules, the same through every door:
//
//   - Text must not be blank; a message larger than
//     channel.MaxMessageSize is Invalid (its error wraps
//     channel.ErrTooLarge).
//   - To is an agent as people type it (NAME or NAME@INSTANCE, parsed by
//     workflow.ParseAddress); "" or "all" is a broadcast. An addressee
//     the tree does not know is a warning in [Posted], not an error.
//   - Channel "" with To NAME@INSTANCE posts on that instance's channel
//     (its workflow instance record's).
//   - Type is a word (a tree name: chat, the default, task_assign, …).
//   - Artifacts are references to files (channel.Artifact: path, size,
//     sha256), written in content.artifacts; each must pass
//     channel.Artifact.Check. The files are not copied: a door that
//     takes paths makes the references on its own host
//     (channel.FileArtifact), where the files are.
//   - InReplyTo is a message id: the post threads on the parent when the
//     channel holds it, else on the bare id, with a warning.
//   - The message is one hop deeper than the one the actor answers
//     (Actor.Hops+1; 0 outside a model run), carries this host and the
//     actor's mode in its metadata, is signed with Actor.Signer, written
//     atomically, then announced (Config.Publish; a failure is logged).
type PostRequest struct {
	Channel   string
	To        string
	Text      string
	Code      string // a code block; "" for none
	Artifacts []channel.Artifact
	Type      string // default "chat"
	InReplyTo string
	// Host is written in metadata.host; default the Service's (the
	// mount's Config.Host, a bridged host's name).
	Host string
	// AwaitReply marks the message as one whose sender waits for the
	// reply (send --wait, send_and_wait).
	AwaitReply bool
	// Priority is "high", "normal" or "low" (inbox.ExtPriority); ""
	// leaves it to the readers' rule (inbox.PriorityOf).
	Priority string
	// ExpireAfter is how long the message may wait unclaimed before its
	// sender gets a delivery report that it expired
	// (delivery.ParseExpireAfter: "10m"; "" the channel's setting).
	ExpireAfter string
}

// Posted is what a post did.
type Posted struct {
	Message channel.Message
	// Queued: the message is kept in a remote host's outbox (no bridge
	// now) and goes out later; Post then also returns an error of kind
	// errkind.Queued for the doors that end there.
	Queued bool
	// Warnings are what the post passed over: an unknown addressee, a
	// parent in another channel.
	Warnings []string
}

// StatusRequest names a message; Channel "" looks in every channel.
type StatusRequest struct {
	Channel string
	ID      string
	// Timeline fills each addressee's timeline (delivery.TimelineFor);
	// on the mount only.
	Timeline bool
}

// WhoRequest selects the board's agents: all, or the named ones.
type WhoRequest struct {
	Names []string
	// StaleAfter is how old a heartbeat may be before its agent is
	// STALE; default presence.DefaultStaleAfter.
	StaleAfter time.Duration
	// Warn, if set, is told of each presence or registry file that cannot
	// be read (skipped); default the Service's logger.
	Warn func(msg string)
}

// ReadRequest asks a page of a channel's messages: the newest Limit
// (after Since when given: a message id or an ISO-8601 time, as
// channel.NewestSince takes it); with Before the Limit messages just
// before message Before; with After the Limit messages after message
// After in channel order (paging forward: More then says later ones were
// left out). Since, Before and After go one at a time.
//
// All asks a transcript (collab read): on the mount every message (after
// message After, else newer than Newer when given; the archive first
// with Archive), the last Limit of them, a file that cannot be read told
// to Skipped; through a bridge the newest page (Limit, else the
// bridge's default), or after message After every message page by page
// (at most Limit), Newer and Archive being Unavailable. Page.From is
// then the position to Follow from. Follow says the caller follows
// after: a file being written is retried, not reported at once.
type ReadRequest struct {
	Channel string
	Since   string
	Before  string
	After   string
	Limit   int

	All     bool
	Newer   time.Duration
	Archive bool
	Follow  bool
	Skipped func(channel.Skip)

	// EmptyIfMissing reads a channel with no folder yet as an empty
	// page, not NotFound: for a door bound to one channel by whoever
	// started it (MCP), where no message yet is the normal start.
	EmptyIfMissing bool
}

// Page is a page of messages, oldest first. More says older ones (after
// Since, or before Before) were left out.
type Page struct {
	Messages []channel.Message
	More     bool
	// Omitted are messages too big for a bridge's reply (bridged only):
	// their ids, to be read on the mount.
	Omitted []string
	// Last is the id of the page's last message, omitted ones included:
	// the After of the next page.
	Last string
	// From is where to Follow from after the page (ReadRequest.All).
	From channel.Cursor
}

// NewMessage makes the message a post writes, by the rules of
// [PostRequest], without what needs the tree (the instance's channel,
// the parent, the addressee's registry entry): the one owner of what a
// message says, for every implementation.
func NewMessage(a Actor, req PostRequest, host string) (*channel.Message, error) {
	from, err := parseAgent("sender", a.Name)
	if err != nil {
		return nil, err
	}
	to, err := Addressee(req.To)
	if err != nil {
		return nil, err
	}
	if req.Channel == "" {
		return nil, errkind.New(errkind.Invalid, "no channel")
	}
	if err := tree.CheckName("channel", req.Channel); err != nil {
		return nil, errkind.Wrap(errkind.Invalid, err)
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, errkind.New(errkind.Invalid, "the message text is empty")
	}
	if req.InReplyTo != "" {
		if _, err := channel.ParseID(req.InReplyTo); err != nil {
			return nil, errkind.New(errkind.Invalid, "in_reply_to %q is not a message id", req.InReplyTo)
		}
	}
	if req.Host != "" {
		host = req.Host
	}
	typ := req.Type
	if typ == "" {
		typ = "chat"
	}
	if err := tree.CheckName("type", typ); err != nil {
		return nil, errkind.Wrap(errkind.Invalid, err) // a word: chat, task_assign, incident, …
	}
	m := &channel.Message{SessionID: req.Channel, From: from, To: to, Type: typ,
		Content:  channel.Content{Text: req.Text},
		Metadata: channel.Metadata{Host: host, Mode: a.Mode, Hops: max(a.Hops, -1) + 1}}
	if req.Code != "" {
		m.Content.Code = &req.Code
	}
	for _, a := range req.Artifacts {
		if err := a.Check(); err != nil {
			return nil, errkind.Wrap(errkind.Invalid, err)
		}
	}
	if err := m.Content.SetArtifacts(req.Artifacts); err != nil {
		return nil, err
	}
	if req.InReplyTo != "" {
		m.SetParent(&channel.Message{ID: req.InReplyTo})
	}
	if req.AwaitReply {
		m.SetAwaitReply()
	}
	if req.Priority != "" {
		p, err := inbox.ParsePriority(req.Priority)
		if err != nil {
			return nil, errkind.Wrap(errkind.Invalid, err)
		}
		inbox.SetPriority(m, p)
	}
	if req.ExpireAfter != "" {
		d, err := delivery.ParseExpireAfter(req.ExpireAfter)
		if err != nil {
			return nil, errkind.Wrap(errkind.Invalid, err)
		}
		delivery.SetExpireAfter(m, d)
	}
	return m, nil
}

// Addressee parses a post's To: "" and "all" are the broadcast, else an
// agent as people type it (workflow.ParseAddress), returned as its id.
func Addressee(to string) (string, error) {
	if to == "" || to == channel.Broadcast {
		return channel.Broadcast, nil
	}
	id, err := parseAgent("recipient", to)
	if err != nil {
		return "", err
	}
	return id, nil
}

// unknownWarning is the warning of a post to an agent the tree does not
// know.
func unknownWarning(to string) string {
	return fmt.Sprintf("%q is not a known agent (no registry entry or presence); sending anyway", workflow.Address(to))
}

// FileArtifacts makes the references of the files at paths, on this
// host (channel.FileArtifact): a path that is not a regular file is
// Invalid.
func FileArtifacts(paths []string) ([]channel.Artifact, error) {
	var out []channel.Artifact
	for _, p := range paths {
		a, err := channel.FileArtifact(p)
		if err != nil {
			return nil, errkind.Wrap(errkind.Invalid, err)
		}
		out = append(out, a)
	}
	return out, nil
}
