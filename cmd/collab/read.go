package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/watcher"
)

// readUsage is read's help, before its flags.
const readUsage = `Usage: collab read --channel C [--since ID|DURATION] [--limit N] [--follow] [--json]

Print a channel as a transcript, oldest first. With --follow, keep printing
new messages as they arrive, like tail -f, until interrupted.

Each message's signature is checked against the keyring. A message that
does not verify is marked after its sender: "(unsigned)" when the sender
has no key (nothing to check it against), "[UNSIGNED]", "[BAD SIGNATURE]",
"[UNKNOWN KEY]" or "[REVOKED KEY]" when it is a forgery (see 'collab
verify'); "(unknown key)" is a signature by a sender with no trusted key.
--json adds "verdict" to each message: verified, unsigned, bad-signature,
unknown-key or revoked-key.

With --remote (or COLLAB_REMOTE=1), on a host without the mount, the
channel is read through a bridge over NATS (--nats), as --agent: the
newest --limit messages (default 50), or with --since ID every message
after ID, page by page; --follow then reads new messages from the CHAT
stream. --root is not used; signatures are checked against --keyring (a
copy of the tree's keys), else shown as not verified here.

Flags:
`

func runRead(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("read", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, readUsage)
		fs.PrintDefaults()
	}
	ch := channelFlag(fs, "channel")
	since := fs.String("since", "", "only messages after this message id, or newer than this duration (10m, 2h)")
	limit := fs.IntP("limit", "n", 0, "only the last N messages (0: all)")
	follow := fs.BoolP("follow", "F", false, "keep printing new messages until interrupted")
	asJSON := fs.Bool("json", false, `print one JSON message per line, with its "verdict"`)
	archive := fs.Bool("archive", false, "include archived messages (channels/C/archive/)")
	poll := fs.Duration("poll", watcher.DefaultPoll, "how often --follow looks for new messages (a watcher's poll)")
	nf := addNATSFlags(fs)
	rf := addRemoteFlags(fs)
	ragent := remoteAgentFlag(fs)
	ringf := keyringFlag(fs)
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("read: unexpected argument %q", fs.Arg(0))
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
	keep, err := sinceFilter(*since, time.Now())
	if err != nil {
		return err
	}
	root := tree.Resolve(*rootf, getenv)
	if rf.on && *archive {
		return usageErrorf("read: --archive does not work with --remote")
	}
	if rf.on && *since != "" {
		if _, err := channel.ParseID(*since); err != nil {
			return usageErrorf("read: with --remote, --since takes a message id, not %q", *since)
		}
	}
	sp := serviceSpec{cmd: "read", root: root, rf: rf, nf: nf, nats: *follow}
	if rf.on {
		if sp.agent, err = actingAgent(ctx, "read", "agent", *ragent); err != nil {
			return err
		}
	}
	svc, err := openService(ctx, sp, getenv, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	// Signatures are judged against --keyring: the tree's, or on a host
	// without the mount a copy of it.
	p := printer{w: stdout, errw: stderr, json: *asJSON, channel: *ch,
		verifier: verifierFor(root, keyring.In(root, *ringf), stderr)}
	var from channel.Cursor
	if svc.remote() {
		from, err = readPages(ctx, svc, *ch, *since, *limit, p)
	} else {
		from, err = readMount(root, *ch, keep, *since, *limit, *archive, *follow, p)
	}
	if err != nil || !*follow {
		return err
	}
	return svc.Follow(ctx, service.FollowRequest{Channel: *ch, From: &from, Poll: *poll,
		Skipped: func(s channel.Skip) { p.skips([]channel.Skip{s}) }}, p.messages)
}

// readMount prints what read prints before it follows, from the files:
// the channel (the archive first with archive), the messages keep keeps,
// the last limit of them. It returns the position to follow from.
func readMount(root tree.Root, ch string, keep func([]channel.Message) []channel.Message, since string, limit int, archive, follow bool, p printer) (channel.Cursor, error) {
	opt := channel.ReaderOptions{}
	if !follow {
		opt.Retries = 1 // one look: report a bad file now, not after retries
	}
	r, err := channel.NewReader(root, ch, channel.Cursor{}, opt)
	if err != nil {
		return channel.Cursor{}, err
	}
	var msgs []channel.Message
	var skips []channel.Skip
	var shown []string // the tail printed, which the follow passes over
	if limit > 0 && since == "" && !archive {
		// The newest few: read only those files, never the whole channel.
		if follow {
			if err := r.SeekEnd(); err != nil {
				return channel.Cursor{}, err
			}
		}
		msgs, skips, err = channel.Tail(root, ch, "", limit)
		if errors.Is(err, iofs.ErrNotExist) {
			err = nil // an empty channel, as Scan has it
		}
		for _, m := range msgs {
			shown = append(shown, m.File)
		}
	} else {
		msgs, skips, err = r.Scan()
	}
	if err != nil {
		return channel.Cursor{}, err
	}
	p.skips(skips)
	if archive {
		old, skips, err := channel.ReadArchive(root, ch, channel.ReaderOptions{})
		if err != nil {
			return channel.Cursor{}, err
		}
		p.skips(skips)
		msgs = append(old, msgs...)
	}
	msgs = keep(msgs)
	if limit > 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	if err := p.messages(msgs); err != nil {
		return channel.Cursor{}, err
	}
	cur := r.Cursor()
	cur.Seen = append(cur.Seen, shown...)
	return cur, nil
}

// readPages prints what read --remote prints before it follows: the
// newest limit messages (the bridge's default without), or with since
// every message after it, page by page (at most limit). It returns the
// position to follow from: the last message's time, the ids printed.
func readPages(ctx context.Context, svc *openedService, ch, since string, limit int, p printer) (channel.Cursor, error) {
	var seen []string
	last := since
	for printed := 0; ; {
		n := limit
		if since != "" && limit > 0 {
			n = min(limit-printed, bridge.MaxReadLimit)
		}
		page, err := svc.Read(ctx, service.ReadRequest{Channel: ch, After: last, Limit: n})
		if err != nil {
			return channel.Cursor{}, err
		}
		for _, id := range page.Omitted {
			fmt.Fprintf(p.errw, "collab: message %s not shown: larger than a bridge reply; read it on the mount\n", tree.Printable(id))
		}
		if err := p.messages(page.Messages); err != nil {
			return channel.Cursor{}, err
		}
		for _, m := range page.Messages {
			seen = append(seen, m.ID+".json")
		}
		printed += len(page.Messages) + len(page.Omitted)
		if page.Last != "" {
			last = page.Last
		}
		// The newest page is one page; after an id, page on to the end.
		if since == "" || !page.More || page.Last == "" || limit > 0 && printed >= limit {
			break
		}
	}
	start := time.Now()
	if n, err := channel.ParseID(last); err == nil {
		start = n.Time
	}
	return channel.Cursor{Floor: start, Seen: seen}, nil
}

// sinceFilter returns a filter for --since: a message id keeps what comes
// after that message; a duration keeps messages newer than now minus it.
func sinceFilter(since string, now time.Time) (func([]channel.Message) []channel.Message, error) {
	all := func(m []channel.Message) []channel.Message { return m }
	if since == "" {
		return all, nil
	}
	if d, err := time.ParseDuration(since); err == nil {
		if d < 0 {
			return nil, usageErrorf("read: --since %s is negative", since)
		}
		cut := now.Add(-d)
		return func(msgs []channel.Message) []channel.Message {
			var out []channel.Message
			for _, m := range msgs {
				if !m.Time().Before(cut) {
					out = append(out, m)
				}
			}
			return out
		}, nil
	}
	n, err := channel.ParseID(since)
	if err != nil {
		return nil, usageErrorf("read: --since %q is neither a message id nor a duration such as 10m", since)
	}
	return func(msgs []channel.Message) []channel.Message {
		for i, m := range msgs {
			if m.ID == since || m.File == since+".json" {
				return msgs[i+1:]
			}
		}
		// Not in the channel: keep what is named later than it.
		var out []channel.Message
		for _, m := range msgs {
			if mn, err := channel.ParseName(m.File); err == nil && mn.Time.After(n.Time) {
				out = append(out, m)
			}
		}
		return out
	}, nil
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
	verdicts := p.verdicts(msgs)
	for i := range msgs {
		if err := p.message(&msgs[i], verdicts[i]); err != nil {
			return err
		}
	}
	return nil
}

// verdicts checks the messages' signatures side by side, one goroutine
// per core: a check of a 1 MB message is mostly hashing it. For --json it
// also drops from each signed message the fields its signatures do not
// cover (channel.Message.StripUnsigned), which the output would show as
// the sender's.
func (p printer) verdicts(msgs []channel.Message) []signing.Verdict {
	out := make([]signing.Verdict, len(msgs))
	workers := min(runtime.GOMAXPROCS(0), len(msgs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(msgs); i += workers {
				out[i] = msgs[i].Verify(p.verifier, p.channel)
				if p.json {
					msgs[i].StripUnsigned()
				}
			}
		})
	}
	wg.Wait()
	return out
}

func (p printer) message(m *channel.Message, verdict signing.Verdict) error {
	if p.json {
		data, err := withVerdict(m, verdict)
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

// withVerdict returns m as JSON with one more member, "verdict" (one the
// message itself carries is replaced).
func withVerdict(m *channel.Message, verdict signing.Verdict) ([]byte, error) {
	if _, ok := m.Extra[keyVerdict]; ok {
		c := *m
		c.Extra = maps.Clone(m.Extra)
		delete(c.Extra, keyVerdict)
		m = &c
	}
	data, err := m.Encode()
	if err != nil {
		return nil, err
	}
	v, _ := verdict.MarshalText()
	data = append(data[:len(data)-1], `,"`+keyVerdict+`":"`...) // an object: ends in '}'
	return append(append(data, v...), `"}`...), nil
}

// keyVerdict is the member read --json adds to each message.
const keyVerdict = "verdict"

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
