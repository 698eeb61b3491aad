package main

import (
	"context"
	"fmt"
	"io"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/watcher"
)

func runRead(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("read", helpText("read"), stderr)
	ch := channelFlag(fs, "channel")
	since := fs.String("since", "", "only messages after this message id, or newer than this duration (10m, 2h)")
	limit := fs.IntP("limit", "n", 0, "only the last N messages (0: all)")
	follow := fs.BoolP("follow", "F", false, "keep printing new messages until interrupted")
	asJSON := fs.Bool("json", false, `print one JSON message per line, with its "verdict"`)
	archive := fs.Bool("archive", false, "include archived messages (channels/C/archive/)")
	poll := fs.Duration("poll", watcher.DefaultPoll, "how often --follow looks for new messages (a watcher's poll)")
	c := addCommon(fs, withNATS, withRemote, withRemoteAgent, withKeyring, withRoot)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	if err := checkChannel("read", *ch); err != nil {
		return err
	}
	if *limit < 0 {
		return usageErrorf("read: --limit must not be negative")
	}
	if *poll <= 0 {
		return usageErrorf("read: --poll must be positive")
	}
	req := service.ReadRequest{Channel: *ch, Limit: *limit, All: true, Archive: *archive, Follow: *follow}
	if err := req.SetSince(*since, c.remote()); err != nil {
		return fmt.Errorf("read: --since: %w", err)
	}
	if c.remote() && *archive {
		return usageErrorf("read: --archive does not work with --remote")
	}
	sp := c.judged(getenv, stderr)
	sp.nats = *follow
	return useService(ctx, sp, getenv, stderr, func(svc *openedService) error {
		// Signatures are judged against --keyring: the tree's, or on a host
		// without the mount a copy of it.
		p := printer{w: stdout, errw: stderr, json: *asJSON, channel: *ch, verifier: sp.verifier}
		if p.verifier == nil { // through a bridge: judged by this host's copy
			p.verifier = c.verifier(sp.root, stderr)
		}
		req.Skipped = func(s channel.Skip) { p.skips([]channel.Skip{s}) }
		page, err := svc.Read(ctx, req)
		if err != nil {
			return err
		}
		for _, id := range page.Omitted {
			fmt.Fprintf(stderr, "collab: message %s not shown: larger than a bridge reply; read it on the mount\n", tree.Printable(id))
		}
		if err := p.messages(page.Messages); err != nil || !*follow {
			return err
		}
		return svc.Follow(ctx, service.FollowRequest{Channel: *ch, From: &page.From, Poll: *poll, Skipped: req.Skipped}, p.messages)
	})
}

// printer writes messages as a transcript or as JSON lines, with the
// verdict on each message's signature (read from channel).
type printer struct {
	w, errw  io.Writer
	json     bool
	channel  string
	verifier *signing.Verifier
}

func (p printer) skips(skips []channel.Skip) {
	for _, s := range skips {
		fmt.Fprintf(p.errw, "collab: skipped %s\n", s)
	}
}

func (p printer) messages(msgs []channel.Message) error {
	verdicts := channel.VerifyAll(msgs, p.verifier, p.channel, p.json)
	for i := range msgs {
		if err := p.message(&msgs[i], verdicts[i]); err != nil {
			return err
		}
	}
	return nil
}

func (p printer) message(m *channel.Message, verdict signing.Verdict) error {
	if p.json {
		data, err := m.EncodeVerdict(verdict)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.w, "%s\n", data)
		return err
	}
	tag, _ := p.verifier.Mark(m.From, verdict)
	_, err := io.WriteString(p.w, service.Transcript(m, tag))
	return err
}
