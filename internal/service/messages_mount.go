package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/registry"
	"github.com/collabdev/collab/presence"
)

// Log attribute keys of the messages operations.
const (
	keyMsg = "msg_id"
	keyErr = "err"
)

// Post posts on the mount (see [PostRequest]).
func (m *Mount) Post(ctx context.Context, a Actor, req PostRequest) (Posted, error) {
	if req.Channel == "" && strings.Contains(req.To, "@") {
		ch, err := m.instanceChannel(req.To)
		if err != nil {
			return Posted{}, err
		}
		req.Channel = ch
	}
	msg, err := NewMessage(a, req, m.cfg.Host)
	if err != nil {
		return Posted{}, err
	}
	var res Posted
	if req.InReplyTo != "" {
		if parent, err := channel.Lookup(m.cfg.Root, req.Channel, req.InReplyTo); err == nil {
			msg.SetParent(&parent)
		} else {
			// The parent is elsewhere: thread on its id all the same.
			res.Warnings = append(res.Warnings, fmt.Sprintf("replying to %s, which is not in channel %s: %v", req.InReplyTo, req.Channel, shortErr(err)))
		}
	}
	if msg.To != channel.Broadcast && !registry.KnownTo(m.cfg.Root, msg.To, m.cfg.Verifier) {
		res.Warnings = append(res.Warnings, unknownWarning(msg.To))
	}
	defer TraceSend(ctx, msg).End()
	w := &channel.Writer{Root: m.cfg.Root, Now: m.cfg.Now, Signer: a.Signer}
	if err := w.Post(msg); err != nil {
		return Posted{}, classifyWrite("post", err)
	}
	if m.cfg.Publish != nil {
		if err := m.cfg.Publish(ctx, msg); err != nil {
			m.cfg.Logger.Warn("sent as a file only", keyMsg, msg.ID, keyErr, err)
		}
	}
	res.Message = *msg
	return res, nil
}

// instanceChannel is the channel of the workflow instance of the agent
// addressed as NAME@INSTANCE: that of the newest instance record that
// lists it.
func (m *Mount) instanceChannel(to string) (string, error) {
	id, err := Addressee(to)
	if err != nil {
		return "", err
	}
	_, instance, _ := workflow.SplitAgentID(id)
	recs, err := workflow.Records(m.cfg.Root)
	if err != nil {
		return "", errkind.Wrap(errkind.Failed, fmt.Errorf("read the workflow instances: %w", err))
	}
	ch := ""
	var newest workflow.Record
	for _, r := range recs {
		if r.Instance != instance || r.Channel == "" || !slices.Contains(r.Agents, id) {
			continue
		}
		if ch == "" || r.Started.After(newest.Started) {
			ch, newest = r.Channel, r
		}
	}
	if ch == "" {
		return "", errkind.New(errkind.NotFound, "no channel: no workflow instance %s lists %s", instance, workflow.Address(id))
	}
	return ch, nil
}

// classifyWrite gives a failed write of the tree its kind: a bad name or
// a message too large is Invalid (the chain keeps channel.ErrTooLarge),
// the rest the standard library's (errkind.Of).
func classifyWrite(what string, err error) error {
	switch {
	case errors.Is(err, channel.ErrTooLarge), errors.Is(err, tree.ErrBadName), errors.Is(err, channel.ErrMalformed):
		return errkind.Wrap(errkind.Invalid, err)
	}
	return errkind.Wrap(errkind.Of(err), fmt.Errorf("%s: %w", what, err))
}

// shortErr drops the path from a file error.
func shortErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Status reads the delivery status of a message on the mount.
func (m *Mount) Status(_ context.Context, req StatusRequest) (delivery.Status, error) {
	if _, err := channel.ParseID(req.ID); err != nil {
		return delivery.Status{}, errkind.New(errkind.Invalid, "%q is not a message id", req.ID)
	}
	ch := req.Channel
	if ch == "" {
		found, err := delivery.FindChannel(m.cfg.Root, req.ID)
		if err != nil {
			return delivery.Status{}, errkind.Wrap(errkind.NotFound, err)
		}
		ch = found
	} else if err := tree.CheckName("channel", ch); err != nil {
		return delivery.Status{}, errkind.Wrap(errkind.Invalid, err)
	}
	opt := m.deliveryOptions()
	opt.Timeline = req.Timeline
	st, err := delivery.Of(m.cfg.Root, ch, req.ID, opt)
	if errors.Is(err, fs.ErrNotExist) {
		return delivery.Status{}, errkind.New(errkind.NotFound, "no message %s in channel %s", req.ID, ch)
	}
	if err != nil {
		return delivery.Status{}, errkind.Wrap(errkind.Of(err), fmt.Errorf("status: %w", err))
	}
	return st, nil
}

// Delivery is the delivery status of m, a message of channel ch, on the
// mount.
func (m *Mount) Delivery(_ context.Context, ch string, msg *channel.Message) delivery.Status {
	return delivery.For(m.cfg.Root, ch, msg, m.deliveryOptions())
}

func (m *Mount) deliveryOptions() delivery.Options {
	return delivery.Options{Now: m.cfg.Now, Host: m.cfg.Host, Verifier: m.cfg.Verifier}
}

// Who gathers the who board on the mount, each heartbeat judged by the
// Verifier; unreadable files are logged and skipped.
func (m *Mount) Who(_ context.Context, req WhoRequest) ([]delivery.AgentRow, error) {
	names := make([]string, len(req.Names))
	for i, n := range req.Names {
		id, err := parseAgent("agent", n)
		if err != nil {
			return nil, err
		}
		names[i] = id
	}
	req.Names = names
	stale := req.StaleAfter
	if stale <= 0 {
		stale = presence.DefaultStaleAfter
	}
	warn := req.Warn
	if warn == nil {
		warn = func(msg string) { m.cfg.Logger.Warn("who: " + msg) }
	}
	rows, err := delivery.Who(m.cfg.Root, req.Names, m.cfg.Now(), stale, m.cfg.Host, warn)
	if errors.Is(err, fs.ErrNotExist) {
		return []delivery.AgentRow{}, nil
	}
	if err != nil {
		return nil, errkind.Wrap(errkind.Of(err), fmt.Errorf("who: %w", err))
	}
	delivery.VerifyRows(m.cfg.Verifier, rows)
	return rows, nil
}

// Read returns a page of a channel's messages on the mount.
func (m *Mount) Read(_ context.Context, req ReadRequest) (Page, error) {
	if err := tree.CheckName("channel", req.Channel); err != nil {
		return Page{}, errkind.Wrap(errkind.Invalid, err)
	}
	if req.Limit < 0 {
		return Page{}, errkind.New(errkind.Invalid, "limit must not be negative")
	}
	if err := m.channelExists(req.Channel); err != nil && !req.EmptyIfMissing {
		return Page{}, err
	}
	if req.All {
		return m.transcript(req)
	}
	if (req.Since != "") && (req.Before != "") || (req.After != "") && (req.Since != "" || req.Before != "") {
		return Page{}, errkind.New(errkind.Invalid, "since, before and after go one at a time")
	}
	if req.After != "" {
		if _, err := channel.ParseID(req.After); err != nil {
			return Page{}, errkind.New(errkind.Invalid, "after: %w", err)
		}
		msgs, more, _, err := channel.Following(m.cfg.Root, req.Channel, req.After, req.Limit)
		if err != nil {
			return Page{}, errkind.Wrap(errkind.Of(err), fmt.Errorf("read channel: %w", err))
		}
		p := Page{Messages: msgs, More: more > 0}
		if len(msgs) > 0 {
			p.Last = msgs[len(msgs)-1].Key()
		}
		return p, nil
	}
	if req.Before != "" {
		if _, err := channel.ParseID(req.Before); err != nil {
			return Page{}, errkind.New(errkind.Invalid, "before %q is not a message id", req.Before)
		}
		msgs, _, err := channel.Tail(m.cfg.Root, req.Channel, req.Before+".json", req.Limit)
		if err != nil {
			return Page{}, errkind.Wrap(errkind.Of(err), fmt.Errorf("read channel: %w", err))
		}
		return Page{Messages: msgs, More: len(msgs) == req.Limit && req.Limit > 0}, nil
	}
	msgs, more, _, err := channel.NewestSince(m.cfg.Root, req.Channel, req.Since, req.Limit)
	if se := (*channel.SinceError)(nil); errors.As(err, &se) {
		return Page{}, errkind.Wrap(errkind.Invalid, err)
	}
	if err != nil {
		return Page{}, errkind.Wrap(errkind.Of(err), fmt.Errorf("read channel: %w", err))
	}
	return Page{Messages: msgs, More: more}, nil
}
