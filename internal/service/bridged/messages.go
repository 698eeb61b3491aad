package bridged

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/delegate"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// Post signs the message here with the client's key (required), keeps it
// in the outbox and sends it through the bridge. When no bridge answers,
// the result is Queued and the error of kind errkind.Queued: the message
// goes out with the next write or `collab outbox flush`. The parent of a
// reply is on the mount: the post threads on its id. A NAME@INSTANCE
// without a channel is not resolved here (the instance records are on
// the mount).
func (s *Service) Post(ctx context.Context, a service.Actor, req service.PostRequest) (service.Posted, error) {
	if a.Name != s.c.Agent() {
		return service.Posted{}, errkind.New(errkind.Forbidden, "post: the bridge client is %s's, not %s's", s.c.Agent(), a.Name)
	}
	host, _ := os.Hostname()
	m, err := service.NewMessage(a, req, host)
	if err != nil {
		return service.Posted{}, err
	}
	defer service.TraceSend(ctx, m).End()
	// What waits in the outbox goes first, in order.
	s.c.Flush(ctx)
	_, err = s.c.Post(ctx, m)
	switch {
	case err == nil:
		return service.Posted{Message: *m}, nil
	case errors.Is(err, remote.ErrQueued):
		return service.Posted{Message: *m, Queued: true}, errkind.Wrap(errkind.Queued, err)
	case errors.Is(err, remote.ErrNoKey), errors.Is(err, channel.ErrTooLarge):
		return service.Posted{}, errkind.Wrap(errkind.Invalid, err)
	case errors.As(err, new(*bridge.Error)):
		// Refused by the bridge: the write is moved to the outbox's
		// failed/ with the reason; the post failed (collab send: exit 1).
		return service.Posted{}, errkind.Wrap(errkind.Failed, err)
	}
	return service.Posted{}, kindOf(err)
}

// Status asks the bridge, which finds the message's channel itself; with
// req.Channel, a message of another channel is not found, so a caller
// learns nothing of the channels it does not name.
func (s *Service) Status(ctx context.Context, req service.StatusRequest) (delivery.Status, error) {
	if _, err := channel.ParseID(req.ID); err != nil {
		return delivery.Status{}, errkind.New(errkind.Invalid, "%q is not a message id", req.ID)
	}
	st, err := s.c.Status(ctx, req.ID)
	if err != nil {
		return delivery.Status{}, kindOf(err)
	}
	if req.Channel != "" && st.Channel != req.Channel {
		return delivery.Status{}, errkind.New(errkind.NotFound, "no message %s in channel %s", req.ID, req.Channel)
	}
	return st, nil
}

// Delivery asks the bridge's status op for m (an empty status, with no
// addressee, when it cannot be had now).
func (s *Service) Delivery(ctx context.Context, ch string, m *channel.Message) delivery.Status {
	st, err := s.Status(ctx, service.StatusRequest{Channel: ch, ID: m.Key()})
	if err != nil {
		return delivery.Status{Channel: ch, ID: m.Key(), From: m.From, To: m.To, Time: m.Time(), Addressees: []delivery.Addressee{}}
	}
	return st
}

// Who is the bridge's who board, as rows: the bridge judged the
// heartbeats' signatures (with the tree's keyring) and their staleness
// (by the default).
func (s *Service) Who(ctx context.Context, req service.WhoRequest) ([]delivery.AgentRow, error) {
	names := make([]string, len(req.Names))
	for i, n := range req.Names {
		id, err := service.AgentID(n)
		if err != nil {
			return nil, err
		}
		names[i] = id
	}
	entries, err := s.c.Who(ctx)
	if err != nil {
		return nil, kindOf(err)
	}
	rows := make([]delivery.AgentRow, 0, len(entries))
	for _, e := range entries {
		if len(names) > 0 && !slices.Contains(names, e.Agent) {
			continue
		}
		r := delivery.AgentRow{Agent: e.Agent, State: e.State, Status: e.Status}
		if e.AgeSeconds != nil {
			r.Age, r.HasAge = time.Duration(*e.AgeSeconds)*time.Second, true
		}
		if e.Status == nil && e.Host != "" {
			r.Reg = &registry.Agent{ID: e.Agent, Host: e.Host, Role: e.Role}
		}
		// The bridge's verdict, and whether it marked the heartbeat.
		if v, ok := signing.ParseVerdict(e.Verdict); ok && e.Verdict != "" {
			r.Verdict = v
			r.Marked = e.Forged || v != signing.Verified && v != signing.Unsigned
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Read is the bridge's read op: the newest Limit after Since, or the
// Limit after message After. A page before a message is not served by
// the bridge.
func (s *Service) Read(ctx context.Context, req service.ReadRequest) (service.Page, error) {
	if req.Before != "" {
		return service.Page{}, errkind.New(errkind.Unavailable, "read: a page before a message is not served through a bridge")
	}
	if req.Limit < 0 {
		return service.Page{}, errkind.New(errkind.Invalid, "limit must not be negative")
	}
	if req.All {
		return s.transcript(ctx, req)
	}
	var p remote.Page
	var err error
	if req.After != "" {
		p, err = s.c.Read(ctx, req.Channel, req.After, req.Limit)
	} else {
		p, err = s.c.ReadSince(ctx, req.Channel, req.Since, req.Limit)
	}
	if err != nil && req.EmptyIfMissing && errkind.Is(kindOf(err), errkind.NotFound) {
		return service.Page{}, nil // the bridge's Read has no EmptyIfMissing
	}
	if err != nil {
		return service.Page{}, kindOf(err)
	}
	out := service.Page{Messages: p.Messages, More: p.More, Last: p.Last}
	for _, o := range p.Omitted {
		out.Omitted = append(out.Omitted, o.ID)
	}
	return out, nil
}

// ExpectReply follows ch on the NATS stream from now (the bridge
// publishes every message that lands on the mount, a foreign writer's
// too), so a reply is seen whatever its writer's clock says.
func (s *Service) ExpectReply(_ context.Context, ch string) (service.Waiter, error) {
	return streamWaiter{c: s.c, ch: ch, start: time.Now()}, nil
}

type streamWaiter struct {
	c     *remote.Client
	ch    string
	start time.Time
}

func (w streamWaiter) Wait(ctx context.Context, id string, opt delegate.Options) (channel.Message, error) {
	return w.c.AwaitReply(ctx, w.ch, w.start, func(m *channel.Message) bool { return opt.IsReply(m, id) })
}

func (streamWaiter) Close() {}

// Follow reads the channel's new messages from the CHAT stream (the
// bridge publishes every file that lands on the mount), from req.From's
// floor (nil: now), passing over those its Seen names.
func (s *Service) Follow(ctx context.Context, req service.FollowRequest, fn func([]channel.Message) error) error {
	start := time.Now()
	var seen []string
	if req.From != nil {
		start = req.From.Floor
		for _, name := range req.From.Seen {
			seen = append(seen, strings.TrimSuffix(name, ".json"))
		}
	}
	if req.Started != nil {
		req.Started() // the stream is read from start: nothing after it is missed
	}
	err := s.c.Follow(ctx, req.Channel, start, seen, func(m channel.Message) error { return fn([]channel.Message{m}) })
	if err != nil && ctx.Err() == nil {
		return kindOf(err)
	}
	return err
}

// Audit is not served through a bridge: it reads every file of the
// channel and its claims, on the mount.
func (s *Service) Audit(context.Context, service.AuditRequest) (service.Audit, error) {
	return service.Audit{}, errkind.New(errkind.Unavailable, "verify: an audit reads the files of the channel: run it on a host with the mount")
}

// Archive is not served through a bridge: it moves the channel's files.
func (s *Service) Archive(context.Context, string, time.Duration) (int, error) {
	return 0, errkind.New(errkind.Unavailable, "archive: it moves the files of the channel: run it on a host with the mount")
}

// WaitReply follows ch on the stream from just before message id (its
// name's time less the skew window) for its reply.
func (s *Service) WaitReply(ctx context.Context, ch, id string, opt delegate.Options) (channel.Message, error) {
	n, err := channel.ParseID(id)
	if err != nil {
		return channel.Message{}, errkind.New(errkind.Invalid, "%q is not a message id", id)
	}
	start := n.Time.Add(-channel.DefaultSkewWindow)
	return s.c.AwaitReply(ctx, ch, start, func(m *channel.Message) bool { return opt.IsReply(m, id) })
}
