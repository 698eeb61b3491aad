package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/presence"
)

// Defaults.
const (
	// DefaultTimeout is how long a request waits for its reply.
	DefaultTimeout = 5 * time.Second
	// firstAttempt bounds a request's first attempt (see request); a
	// bridge answers in milliseconds.
	firstAttempt = time.Second
	// FlushBudget bounds one Flush.
	FlushBudget = 10 * time.Second
)

var (
	// ErrQueued is wrapped by the error of a write that was kept in the
	// outbox because the bridge could not be reached or asked to retry.
	ErrQueued = errors.New("remote: kept in the outbox")
	// ErrUnreachable is wrapped by the error of a request that got no
	// reply: no bridge is listening, or none answered in time.
	ErrUnreachable = errors.New("remote: bridge unreachable")
	// ErrNoKey is returned by the writes of a client without a signer.
	ErrNoKey = errors.New("remote: a remote agent needs a signing key: collab key new --agent A, then trust it on the mount with collab key trust")
)

// QueuedError is the error of a write kept in the outbox.
type QueuedError struct {
	Path string // the entry's file
	Err  error  // why it was not delivered
}

func (e *QueuedError) Error() string {
	return fmt.Sprintf("%v; kept in the outbox as %s", e.Err, e.Path)
}

// Is makes errors.Is(err, ErrQueued) true.
func (e *QueuedError) Is(target error) bool { return target == ErrQueued }

func (e *QueuedError) Unwrap() error { return e.Err }

// Requester sends one request and returns the reply's payload; the NATS
// connection is one, a test's fake another.
type Requester interface {
	Request(ctx context.Context, subject string, data []byte) ([]byte, error)
}

// natsRequester is a Requester over a NATS connection.
type natsRequester struct{ nc *natsbus.Conn }

func (r natsRequester) Request(ctx context.Context, subject string, data []byte) ([]byte, error) {
	return natsbus.Request(ctx, r.nc, subject, data)
}

// offline is the Requester of a client that could not connect.
type offline struct{ err error }

func (o offline) Request(context.Context, string, []byte) ([]byte, error) { return nil, o.err }

// Config makes a Client.
type Config struct {
	Agent     string
	Signer    *signing.Signer // signs posts and presence; nil: reads only
	StateDir  string          // the agent's local state (see the package doc)
	Requester Requester
	Stream    *natsbus.Reader  // for Follow; nil: Follow fails
	Timeout   time.Duration    // per request; 0: DefaultTimeout
	Now       func() time.Time // default time.Now
	Logger    *slog.Logger     // default slog.Default()
}

// Client acts as one agent through the bridge. It is safe for concurrent
// use.
type Client struct {
	cfg Config
	box outbox
	bus *natsbus.Bus // closed by Close; nil when made by New
}

// New returns a Client over c.Requester.
func New(c Config) (*Client, error) {
	if err := tree.CheckName("agent", c.Agent); err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	if c.Signer != nil && c.Signer.Agent() != c.Agent {
		return nil, fmt.Errorf("remote: the key is %s's, not %s's", c.Signer.Agent(), c.Agent)
	}
	if c.StateDir == "" || c.Requester == nil {
		return nil, errors.New("remote: a client needs a state directory (--state-dir, or a home for the default) and a requester")
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return &Client{cfg: c, box: outbox{dir: filepath.Join(c.StateDir, OutboxDir), now: c.Now}}, nil
}

// Dial connects to NATS with o (its InboxPrefix set to the agent's) and
// returns a Client over that connection; Close closes it. When no server
// can be reached the Client is offline: its writes are queued and its
// reads fail, each with an error wrapping ErrUnreachable. Refused
// credentials are an error.
func Dial(ctx context.Context, o natsbus.Options, c Config) (*Client, error) {
	o.InboxPrefix = bridge.InboxPrefix(c.Agent)
	bus, err := natsbus.Connect(ctx, o)
	if errors.Is(err, natsbus.ErrUnreachable) {
		c.Requester = offline{err}
		return New(c)
	}
	if err != nil {
		return nil, err
	}
	c.Requester = natsRequester{bus.Conn()}
	if c.Stream, err = natsbus.NewReader(bus.Conn()); err != nil {
		bus.Close()
		return nil, fmt.Errorf("remote: %w", err)
	}
	cl, err := New(c)
	if err != nil {
		bus.Close()
		return nil, err
	}
	cl.bus = bus
	return cl, nil
}

// Close closes the connection Dial made.
func (c *Client) Close() {
	if c.bus != nil {
		c.bus.Close()
	}
}

// Agent returns the agent the client acts as.
func (c *Client) Agent() string { return c.cfg.Agent }

// OutboxPath returns the outbox folder.
func (c *Client) OutboxPath() string { return c.box.dir }

// DefaultStateDir returns agent's state directory:
// $XDG_STATE_HOME/collab/remote/AGENT, or ~/.local/state/… when unset
// (as signing.DefaultKeyPath finds the home). It is "" when no home is
// known either: never a folder relative to the working directory.
func DefaultStateDir(agent string, getenv func(string) string) string {
	base := getenv("XDG_STATE_HOME")
	if base == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		if home == "" {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "collab", "remote", agent)
}

// request sends body as op and decodes a successful reply into out (which
// embeds bridge.Reply). A refusal is a *bridge.Error; no reply wraps
// ErrUnreachable.
//
// A request handed to a bridge that dies before it answers is lost with
// it, and NATS does not say so: waiting the whole Timeout for it stalled
// a remote watcher (whose claims are requests made in its loop) that long
// each time a bridge was killed. So the request is sent in attempts, the
// first bounded by firstAttempt and each next one twice as long, within
// Timeout: a lost attempt is sent again to whichever bridge of the queue
// group takes it, or to none (no responders: unreachable at once). Every
// op may be sent twice: a post already there answers "existed", a claim
// file already published fs.ErrExist, which the claim store reads.
func (c *Client) request(ctx context.Context, op string, body []byte, out interface{ Err() error }) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var (
		data []byte
		err  error
	)
	for wait := firstAttempt; ; wait *= 2 {
		actx, acancel := context.WithTimeout(ctx, wait)
		data, err = c.cfg.Requester.Request(actx, bridge.RequestSubject(op, c.cfg.Agent), body)
		lost := err != nil && actx.Err() != nil && ctx.Err() == nil
		acancel()
		if !lost {
			break
		}
	}
	if err != nil {
		if errors.Is(err, natsbus.ErrNoResponders) {
			return fmt.Errorf("%w: no bridge is listening", ErrUnreachable)
		}
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &bridge.Error{Code: bridge.CodeInternal, Msg: fmt.Sprintf("bad reply: %v", err)}
	}
	return out.Err()
}

// retryable reports whether a request's error leaves its write queued.
func retryable(err error) bool {
	var be *bridge.Error
	if errors.As(err, &be) {
		return be.Retryable()
	}
	return true // no reply, or a local failure to send
}

// maxRenames bounds the new ids a post takes after conflicts.
const maxRenames = 10

// deliver sends an entry: removed after ok, moved to failed/ when refused
// for good, else kept (a *QueuedError). A post marked Renew refused as a
// conflict (another message already has its id: ids have 65,536 names per
// agent and second) is sealed again under a new id, which replaces the
// entry, and sent again: the entry finally sent is returned.
func (c *Client) deliver(ctx context.Context, e Entry, out interface{ Err() error }) (Entry, error) {
	for try := 0; ; try++ {
		err := c.request(ctx, e.Op, e.Body, out)
		var be *bridge.Error
		switch {
		case err == nil:
			return e, c.box.remove(e.Name)
		case retryable(err):
			return e, &QueuedError{Path: c.box.path(e.Name), Err: err}
		case errors.As(err, &be) && be.Code == bridge.CodeConflict && e.Op == bridge.OpPost && e.Renew && c.cfg.Signer != nil && try < maxRenames:
			renamed, rerr := c.rename(e)
			if rerr == nil {
				e = renamed
				continue
			}
			err = errors.Join(err, rerr)
		}
		path, ferr := c.box.fail(e, err.Error())
		if ferr != nil {
			return e, errors.Join(err, ferr)
		}
		return e, fmt.Errorf("refused, moved to %s: %w", path, err)
	}
}

// rename seals a post's message again under a new id and replaces its
// entry: the new entry is published before the old one is removed, so a
// crash in between leaves both, and both are sent (two copies, never
// none).
func (c *Client) rename(e Entry) (Entry, error) {
	var r bridge.PostRequest
	if err := json.Unmarshal(e.Body, &r); err != nil {
		return e, fmt.Errorf("rename: %w", err)
	}
	m, err := channel.Decode(r.Message, "", r.Channel)
	if err != nil {
		return e, fmt.Errorf("rename: %w", err)
	}
	m.ID, m.Timestamp, m.File = "", "", ""
	w := channel.Writer{Signer: c.cfg.Signer, Now: c.cfg.Now}
	data, err := w.Seal(&m)
	if err != nil {
		return e, fmt.Errorf("rename: %w", err)
	}
	body, err := json.Marshal(bridge.PostRequest{Channel: r.Channel, Message: data})
	if err != nil {
		return e, fmt.Errorf("rename: %w", err)
	}
	n, err := c.box.add(bridge.OpPost, body, true)
	if err != nil {
		return e, err
	}
	return n, c.box.remove(e.Name)
}

// postID returns the id of the message a post entry carries.
func postID(e Entry) string {
	var r bridge.PostRequest
	var m struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(e.Body, &r) == nil {
		_ = json.Unmarshal(r.Message, &m)
	}
	return m.ID
}

// Post signs m as the client's agent (filling in its id, time and
// defaults as channel.Writer.Post does), queues it in the outbox, sends
// it, and returns its id. The error wraps ErrQueued when the message is
// kept for a later Flush, and a *bridge.Error when it was refused (the
// entry is then in failed/). A message over the size limit wraps
// channel.ErrTooLarge and is not queued.
func (c *Client) Post(ctx context.Context, m *channel.Message) (string, error) {
	if c.cfg.Signer == nil {
		return "", ErrNoKey
	}
	m.From = c.cfg.Agent
	w := channel.Writer{Signer: c.cfg.Signer, Now: c.cfg.Now}
	data, err := w.Seal(m)
	if err != nil {
		return "", fmt.Errorf("post: %w", err)
	}
	body, err := json.Marshal(bridge.PostRequest{Channel: m.SessionID, Message: data})
	if err != nil {
		return "", fmt.Errorf("post: %w", err)
	}
	e, err := c.box.add(bridge.OpPost, body, true)
	if err != nil {
		return "", fmt.Errorf("post: %w", err)
	}
	var r bridge.PostReply
	sent, err := c.deliver(ctx, e, &r)
	id := postID(sent)
	if err != nil {
		return id, fmt.Errorf("post %s: %w", id, err)
	}
	if id != m.ID { // renamed after a conflict: m is what was posted
		var pr bridge.PostRequest
		if json.Unmarshal(sent.Body, &pr) == nil {
			if fixed, err := channel.Decode(pr.Message, "", pr.Channel); err == nil {
				fixed.File = fixed.ID + ".json"
				*m = fixed
			}
		}
	}
	return id, nil
}

// Kill asks agent of's watcher to kill job: kill is the kill file's JSON,
// signed by the client's agent. It goes through the outbox like a post.
func (c *Client) Kill(ctx context.Context, of, job string, kill json.RawMessage) error {
	if c.cfg.Signer == nil {
		return ErrNoKey
	}
	body, err := json.Marshal(bridge.KillRequest{Of: of, Job: job, Kill: kill})
	if err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	e, err := c.box.add(bridge.OpKill, body, false)
	if err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	var r bridge.KillReply
	if _, err := c.deliver(ctx, e, &r); err != nil {
		return fmt.Errorf("kill %s: %w", job, err)
	}
	return nil
}

// Presence signs s as the client's agent and writes it through the
// bridge. It is not queued (see the package doc).
func (c *Client) Presence(ctx context.Context, s presence.Status) error {
	if c.cfg.Signer == nil {
		return ErrNoKey
	}
	s.AgentID = c.cfg.Agent
	if s.Timestamp == "" {
		s.Timestamp = presence.FormatTime(c.cfg.Now())
	}
	s.Sign(c.cfg.Signer)
	data, err := s.Encode()
	if err != nil {
		return fmt.Errorf("presence: %w", err)
	}
	body, err := json.Marshal(bridge.PresenceRequest{Presence: data})
	if err != nil {
		return fmt.Errorf("presence: %w", err)
	}
	var r bridge.PresenceReply
	if err := c.request(ctx, bridge.OpPresence, body, &r); err != nil {
		return fmt.Errorf("presence: %w", err)
	}
	return nil
}

// Page is one read: the messages in the channel's order, the stand-ins of
// those too big for a reply, the id of the last of either (the after of
// the next page), and whether more follow.
type Page struct {
	Messages []channel.Message
	Omitted  []bridge.Omitted
	Last     string
	More     bool
}

// Read returns the messages of ch after the message after ("": the
// newest), at most limit (0: the bridge's default).
func (c *Client) Read(ctx context.Context, ch, after string, limit int) (Page, error) {
	return c.read(ctx, bridge.ReadRequest{Channel: ch, After: after, Limit: limit})
}

// ReadSince returns the newest limit messages of ch after since (a message
// id or an ISO-8601 time, as channel.NewestSince takes it; "": the
// newest); More says older ones after since were left out.
func (c *Client) ReadSince(ctx context.Context, ch, since string, limit int) (Page, error) {
	return c.read(ctx, bridge.ReadRequest{Channel: ch, Since: since, Limit: limit})
}

func (c *Client) read(ctx context.Context, req bridge.ReadRequest) (Page, error) {
	ch := req.Channel
	if err := tree.CheckName("channel", ch); err != nil {
		return Page{}, fmt.Errorf("read: %w", err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Page{}, fmt.Errorf("read: %w", err)
	}
	var r bridge.ReadReply
	if err := c.request(ctx, bridge.OpRead, body, &r); err != nil {
		return Page{}, fmt.Errorf("read %s: %w", ch, err)
	}
	p := Page{More: r.More}
	for _, raw := range r.Messages {
		var o bridge.Omitted
		if json.Unmarshal(raw, &o) == nil && o.Omitted != "" {
			p.Omitted = append(p.Omitted, o)
			p.Last = o.ID
			continue
		}
		m, err := channel.Decode(raw, "", ch)
		if err == nil {
			_, err = channel.ParseID(m.ID)
		}
		if err == nil && m.SessionID != ch {
			err = fmt.Errorf("a message of channel %q", m.SessionID)
		}
		if err != nil {
			c.cfg.Logger.Warn("skipped a message the bridge sent", "channel", ch, "err", err)
			continue
		}
		m.File = m.ID + ".json"
		p.Messages = append(p.Messages, m)
		p.Last = m.ID
	}
	return p, nil
}

// Who returns the agents as `collab who --json` lists them on the mount.
func (c *Client) Who(ctx context.Context) ([]delivery.WhoEntry, error) {
	var r bridge.WhoReply
	if err := c.request(ctx, bridge.OpWho, []byte("{}"), &r); err != nil {
		return nil, fmt.Errorf("who: %w", err)
	}
	var all []delivery.WhoEntry
	if err := json.Unmarshal(r.Agents, &all); err != nil {
		return nil, fmt.Errorf("who: the bridge's answer: %w", err)
	}
	return all, nil
}

// Status returns message id's delivery status, as `collab status` shows
// it on the mount. A message in no channel is a *bridge.Error with
// CodeNotFound.
func (c *Client) Status(ctx context.Context, id string) (delivery.Status, error) {
	body, err := json.Marshal(bridge.StatusRequest{Message: id})
	if err != nil {
		return delivery.Status{}, err
	}
	var r bridge.StatusReply
	if err := c.request(ctx, bridge.OpStatus, body, &r); err != nil {
		return delivery.Status{}, fmt.Errorf("status %s: %w", id, err)
	}
	var st delivery.Status
	if err := json.Unmarshal(r.Status, &st); err != nil {
		return delivery.Status{}, fmt.Errorf("status %s: the bridge's answer: %w", id, err)
	}
	return st, nil
}

// FlushResult is what a Flush did.
type FlushResult struct {
	Sent    []Entry // delivered (or found already there)
	Refused []error // entries moved to failed/, each with its reason
	Left    int     // entries still queued
	Err     error   // why Left is not 0 (wraps ErrQueued), or a local failure
}

// Flush resends the outbox, oldest first, within FlushBudget (and ctx).
// It stops at the first entry that stays queued.
func (c *Client) Flush(ctx context.Context) FlushResult {
	ctx, cancel := context.WithTimeout(ctx, FlushBudget)
	defer cancel()
	var res FlushResult
	entries, err := list(c.box.dir)
	if err != nil {
		res.Err = err
		return res
	}
	for i, e := range entries {
		if e.Op == "" {
			path, err := c.box.fail(e, "unreadable outbox entry")
			res.Refused = append(res.Refused, errors.Join(fmt.Errorf("unreadable outbox entry moved to %s", path), err))
			continue
		}
		var r bridge.Reply
		sent, err := c.deliver(ctx, e, &r)
		switch {
		case err == nil:
			res.Sent = append(res.Sent, sent)
		case errors.Is(err, ErrQueued):
			res.Left = len(entries) - i
			res.Err = err
			return res
		default:
			res.Refused = append(res.Refused, fmt.Errorf("%s %s: %w", e.Op, e.Describe(), err))
		}
	}
	return res
}

// Outbox lists the entries waiting in the outbox, oldest first.
func (c *Client) Outbox() ([]Entry, error) { return list(c.box.dir) }

// Failed lists the entries the bridge refused, oldest first.
func (c *Client) Failed() ([]Entry, error) { return list(filepath.Join(c.box.dir, FailedDir)) }

// Pending lists the outbox of the state directory stateDir, oldest first,
// without a connection. An entry that cannot be read has an empty Op.
func Pending(stateDir string) ([]Entry, error) { return list(filepath.Join(stateDir, OutboxDir)) }

// Refused lists the failed/ entries of the state directory stateDir.
func Refused(stateDir string) ([]Entry, error) {
	return list(filepath.Join(stateDir, OutboxDir, FailedDir))
}
