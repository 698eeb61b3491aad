package bridged

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

// Inbox implements service.Workspace with this host's own cursors
// (STATE/inbox): the channels must be named, the bridge is not asked for
// every channel; workflow aliases, which live in the tree, are not read.
// Without Peek exactly the messages read are acknowledged.
func (s *Service) Inbox(ctx context.Context, req service.InboxRequest) (service.InboxResult, error) {
	if len(req.Channels) == 0 {
		return service.InboxResult{}, errkind.New(errkind.Invalid, "name the channels (--channel C…): the bridge is not asked for every channel")
	}
	if req.Limit < 0 {
		return service.InboxResult{}, errkind.New(errkind.Invalid, "limit must not be negative")
	}
	res := service.InboxResult{Agent: s.c.Agent()}
	read := map[string][]string{}
	for _, ch := range req.Channels {
		if err := tree.CheckName("channel", ch); err != nil {
			return service.InboxResult{}, errkind.Wrap(errkind.Invalid, err)
		}
		its, omitted, looked, err := s.c.Inbox(ctx, ch)
		if err != nil {
			return service.InboxResult{}, kindOf(err)
		}
		for _, o := range omitted {
			res.Notes = append(res.Notes, fmt.Sprintf("message %s not shown: %s; read it on the mount", tree.Printable(o.ID), tree.Printable(o.Omitted)))
		}
		res.Items = append(res.Items, its...)
		read[ch] = looked
	}
	slices.SortStableFunc(res.Items, func(a, b inbox.Item) int {
		return cmp.Or(a.Message.Time().Compare(b.Message.Time()), strings.Compare(a.Message.ID, b.Message.ID))
	})
	if req.Peek && req.Limit > 0 && len(res.Items) > req.Limit {
		res.More = len(res.Items) - req.Limit
		res.Items = res.Items[res.More:]
	}
	inbox.ByPriority(res.Items)
	if req.Peek {
		return res, nil
	}
	for _, ch := range req.Channels {
		if len(read[ch]) == 0 {
			continue
		}
		if err := s.c.Acknowledge(ch, read[ch]); err != nil {
			return service.InboxResult{}, kindOf(err)
		}
	}
	return res, nil
}

// AckInbox implements service.Workspace on one channel: this host's
// cursor takes every message up to the message id (or, for a time, every
// unread message not newer than it).
func (s *Service) AckInbox(ctx context.Context, req service.AckRequest) (service.Acked, error) {
	if len(req.Channels) != 1 {
		return service.Acked{}, errkind.New(errkind.Invalid, "give one channel")
	}
	ch := req.Channels[0]
	if err := tree.CheckName("channel", ch); err != nil {
		return service.Acked{}, errkind.Wrap(errkind.Invalid, err)
	}
	if req.Until == "" {
		return service.Acked{}, errkind.New(errkind.Invalid, "no until: give a message id or a time")
	}
	until, err := inbox.ParseUntil(req.Until)
	if err != nil {
		return service.Acked{}, errkind.Wrap(errkind.Invalid, err)
	}
	out := service.Acked{Agent: s.c.Agent(), Until: until, Channel: ch}
	if until.ID != "" {
		out.N, err = s.c.AckUntil(ctx, ch, until.ID)
		if errors.Is(err, inbox.ErrUnknownMessage) {
			return service.Acked{}, errkind.Wrap(errkind.NotFound, err)
		}
		return out, kindOf(err)
	}
	msgs, _, err := s.c.Unread(ctx, ch)
	if err != nil {
		return service.Acked{}, kindOf(err)
	}
	var ids []string
	for k := range msgs {
		if msgs[k].Time().After(until.Time) {
			continue
		}
		ids = append(ids, msgs[k].ID)
		if msgs[k].IsFor(s.c.Agent()) {
			out.N++
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	return out, kindOf(s.c.Acknowledge(ch, ids))
}

// Doc implements service.Workspace: one doc op, performed on the mount
// by the bridge as the client's agent.
func (s *Service) Doc(ctx context.Context, _ service.Actor, req service.DocRequest) (service.DocResult, error) {
	file, err := req.Check()
	if err != nil {
		return service.DocResult{}, err
	}
	r, err := s.c.Doc(ctx, bridge.DocRequest{Action: req.Action, Channel: req.Channel, File: req.File,
		Content: req.Content, IfVersion: req.IfVersion})
	res := service.DocResult{File: file, Doc: r.Doc, Entries: r.Entries, More: r.More, Version: r.Version}
	var be *bridge.Error
	switch {
	case errors.As(err, &be) && be.Code == bridge.CodeNotFound:
		return res, errkind.Wrap(errkind.NotFound, fmt.Errorf("%s does not exist in channel %s: %w", file, req.Channel, fs.ErrNotExist))
	case errors.As(err, &be) && be.Code == bridge.CodeConflict:
		msg := be.Msg
		if r.Version != "" {
			msg += " (its version now: " + r.Version + ")"
		}
		return res, errkind.New(errkind.Conflict, "%s", msg)
	case errors.Is(err, natsbus.ErrMaxPayload):
		return res, errkind.New(errkind.Unavailable, "%d bytes: larger than a NATS message may be here (the server's max_payload); write it on the mount; nothing was written", len(req.Content))
	case errors.Is(err, remote.ErrUnreachable):
		return res, kindOf(fmt.Errorf("%w; nothing was written", err))
	case err != nil:
		return res, kindOf(err)
	case req.Action == "read" && r.Doc == nil:
		return res, errkind.New(errkind.Failed, "the bridge's answer has no document")
	}
	if req.Action == "list" && res.Entries == nil {
		res.Entries = []documents.Entry{}
	}
	return res, nil
}

// errJobs answers the job operations: the jobs are on the mount, or, for
// this host's own watcher, in its local tree (a Mount on it).
var errJobs = errkind.New(errkind.Unavailable, "jobs are read on the mount (or, for this host's own watcher, in its local tree)")

// Jobs implements service.Workspace: Unavailable.
func (s *Service) Jobs(context.Context, service.JobQuery) ([]jobs.Job, error) { return nil, errJobs }

// Job implements service.Workspace: Unavailable.
func (s *Service) Job(context.Context, service.JobQuery, string) (jobs.Job, error) {
	return jobs.Job{}, errJobs
}

// MayKill implements service.Workspace: Unavailable.
func (s *Service) MayKill(context.Context, service.Actor, service.KillRequest, jobs.Job) error {
	return errJobs
}

// KillJob implements service.Workspace: Unavailable.
func (s *Service) KillJob(context.Context, service.Actor, service.KillRequest) (service.Killed, error) {
	return service.Killed{}, errJobs
}

// errKeys answers the keyring's operations: the keyring is the tree's,
// changed by its admin on the mount.
var errKeys = errkind.New(errkind.Unavailable, "the keyring is changed and listed on the mount, by the tree's admin")

// Keys implements service.Workspace: Unavailable.
func (s *Service) Keys(context.Context, service.KeyRequest, []string) (service.KeyList, error) {
	return service.KeyList{}, errKeys
}

// TrustKey implements service.Workspace: Unavailable.
func (s *Service) TrustKey(context.Context, service.KeyRequest) (service.KeyList, error) {
	return service.KeyList{}, errKeys
}

// RevokeKey implements service.Workspace: Unavailable.
func (s *Service) RevokeKey(context.Context, service.KeyRequest) (service.KeyList, error) {
	return service.KeyList{}, errKeys
}
