package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
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
	var b strings.Builder
	ts := m.Time().Format("2006-01-02 15:04:05")
	fmt.Fprintf(&b, "%s  %s%s → %s", ts, tree.Printable(workflow.Display(m.From)), p.mark(m.From, verdict), tree.Printable(workflow.Display(m.To)))
	if m.Type != "" && m.Type != "chat" {
		fmt.Fprintf(&b, "  [%s]", tree.Printable(m.Type))
	}
	fmt.Fprintf(&b, "  %s", tree.Printable(m.ID))
	if m.Metadata.InReplyTo != "" {
		fmt.Fprintf(&b, "  (re %s)", tree.Printable(m.Metadata.InReplyTo))
	}
	b.WriteByte('\n')
	indent(&b, m.Content.Text)
	if m.Content.Code != nil && *m.Content.Code != "" {
		b.WriteString("  ```\n")
		indent(&b, *m.Content.Code)
		b.WriteString("  ```\n")
	}
	for _, a := range m.Content.ArtifactList() {
		indent(&b, "artifact: "+a.String())
	}
	b.WriteByte('\n')
	_, err := io.WriteString(p.w, b.String())
	return err
}

// mark returns the tag read shows after the sender of a message that does
// not verify (signing.Verifier.Mark), with its leading space.
func (p printer) mark(from string, verdict signing.Verdict) string {
	if tag, _ := p.verifier.Mark(from, verdict); tag != "" {
		return " " + tag
	}
	return ""
}

// indent writes text indented by two spaces. Control characters other
// than tab are shown escaped: a message must not drive the terminal.
func indent(b *strings.Builder, text string) {
	b.Grow(len(text) + 2*strings.Count(text, "\n") + 3)
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString("  ")
		start := 0 // of the run of printable text not yet written
		for i, r := range line {
			if r == '\t' || r >= 0x20 && r < 0x7f || r > 0x9f && r != utf8.RuneError {
				continue
			}
			b.WriteString(line[start:i])
			if r == utf8.RuneError {
				b.WriteRune(r) // an invalid byte, or U+FFFD itself
			} else {
				fmt.Fprintf(b, "\\x%02x", r)
			}
			_, n := utf8.DecodeRuneInString(line[i:])
			start = i + n
		}
		b.WriteString(line[start:])
		b.WriteByte('\n')
	}
}
