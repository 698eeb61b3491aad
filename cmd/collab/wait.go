package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// defaultWaitTimeout bounds send --wait and wait unless --timeout says
// otherwise.
const defaultWaitTimeout = 10 * time.Minute

func runWait(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("wait", helpText("wait"), stderr)
	replyTo := fs.String("reply-to", "", "id of the message whose reply to wait for")
	ch := needChannel(fs, "channel")
	from := fs.String("from", "", "only a reply from this agent")
	timeout := fs.Duration("timeout", defaultWaitTimeout, "give up after this long (0: wait until interrupted)")
	poll := fs.Duration("poll", delegate.DefaultPoll, "how often to look at the channel")
	asJSON := fs.Bool("json", false, `print the whole reply as JSON, with its "verdict"`)
	c := &common{fs: fs}
	tf := addTrustFlags(c)
	c.add(withNATS, withRoot)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	if *replyTo == "" {
		return usageErrorf("wait: --reply-to is required")
	}
	if *from != "" {
		if err := tree.CheckName("agent", *from); err != nil {
			return usageErrorf("wait: %v", err)
		}
	}
	if *timeout < 0 || *poll <= 0 {
		return usageErrorf("wait: --timeout must not be negative and --poll must be positive")
	}
	root := c.tree(getenv)
	judge, err := tf.judge("wait", root, stderr)
	if err != nil {
		return err
	}
	return useService(ctx, serviceSpec{cmd: "wait", root: root, nf: c.nf, nats: true}, getenv, stderr, func(svc *openedService) error {
		judge.From, judge.Poll = *from, *poll
		w := replyWait{root: root, channel: *ch, id: *replyTo, timeout: *timeout, opt: judge, json: *asJSON,
			await: func(ctx context.Context, opt delegate.Options) (channel.Message, error) {
				return svc.WaitReply(ctx, *ch, *replyTo, opt)
			}}
		return w.run(ctx, getenv, stdout, stderr)
	})
}

// trustFlags are --trust and --keyring of a command that waits for a
// reply: which replies it takes, by the verdict on their signature.
type trustFlags struct {
	trust, keyring *string
}

// addTrustFlags adds --trust, and --keyring to c.
func addTrustFlags(c *common) trustFlags {
	trust := c.fs.String("trust", string(signing.DefaultPolicy), "which replies to take: any, known (a reply in the name of an agent with a trusted key must verify) or signed (verified replies only)")
	envflag.FromEnv(c.fs, "trust", envTrust)
	return trustFlags{trust: trust, keyring: c.add(withKeyring).ring}
}

// judge is the trust policy and keyring a wait judges replies by
// (service.ReplyTrust), from tf.
func (tf trustFlags) judge(cmd string, root tree.Root, stderr io.Writer) (delegate.Options, error) {
	trust, err := signing.ParsePolicy(*tf.trust)
	if err != nil {
		return delegate.Options{}, usageErrorf("%s: --%v", cmd, err)
	}
	opt, err := service.ReplyTrust(root, trust, *tf.keyring, warner(stderr))
	return opt, cmdErr(cmd, err)
}

// replyWait is one wait for a reply, as send --wait, wait and delegate
// --wait do it (service.AwaitReply), and its printing.
type replyWait struct {
	root    tree.Root
	channel string
	id      string
	timeout time.Duration // 0: none
	opt     delegate.Options
	json    bool
	// track: print each addressee's change of delivery state on stderr
	// and end with exit 4 once every addressee is refused, failed or
	// undeliverable. Guard notices are then not replies.
	track bool
	// await, if set, waits for the reply through the service; remote:
	// through a bridge.
	await  func(ctx context.Context, opt delegate.Options) (channel.Message, error)
	remote bool
	// answer, if set, is what json prints: the reply's JSON in the
	// caller's document (delegate --json --wait).
	answer func(reply json.RawMessage) any
}

// run waits and prints the reply's text (or the reply as JSON).
func (w replyWait) run(ctx context.Context, getenv env, stdout, stderr io.Writer) error {
	if w.opt.Verifier == nil {
		// A command without --trust and --keyring (delegate --wait).
		trust, ring := cmp.Or(getenv(envTrust), string(signing.DefaultPolicy)), getenv(envKeyring)
		judge, err := trustFlags{trust: &trust, keyring: &ring}.judge("wait", w.root, stderr)
		if err != nil {
			return err
		}
		w.opt.Trust, w.opt.Verifier = judge.Trust, judge.Verifier
	}
	req, stderr := w.request(stderr)
	if w.track {
		req.Status = service.MountStatus(w.root, w.channel, w.id, hostname(), w.opt.Verifier)
	}
	got, err := service.AwaitReply(ctx, req)
	return w.done(got, err, stdout, stderr)
}

// request is the wait's service.AwaitRequest, telling stderr (returned
// locked: the status tracker writes from its goroutine) of forged
// replies and of changes of delivery state.
func (w replyWait) request(stderr io.Writer) (service.AwaitRequest, io.Writer) {
	stderr = &lockedWriter{w: stderr}
	return service.AwaitRequest{Channel: w.channel, ID: w.id, Timeout: w.timeout, Options: w.opt, Wait: w.await, Streamed: w.remote,
		Forged: func(m *channel.Message, v signing.Verdict) {
			fmt.Fprintf(stderr, "collab: ignored a reply in %s's name that does not verify (%s); still waiting\n", tree.Printable(m.From), v)
		},
		Changed: func(agent, state string) { fmt.Fprintf(stderr, "collab: %s: %s\n", agent, tree.Printable(state)) },
	}, stderr
}

// done prints what a wait got: the guards' notices, then the reply or
// the error of a wait that got none.
func (w replyWait) done(got service.Awaited, err error, stdout, stderr io.Writer) error {
	for _, text := range got.Notices {
		fmt.Fprintln(stdout, text)
	}
	if err != nil {
		return w.failed(err)
	}
	return w.print(got, stdout, stderr)
}

// failed is the error of a wait that got no reply.
func (w replyWait) failed(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) && w.remote:
		return &exitError{code: exitNothing, msg: fmt.Sprintf("no reply to %s within %s; see what comes with: collab read --remote --channel %s --since %s --follow",
			w.id, w.timeout, w.channel, w.id)}
	case errors.Is(err, context.DeadlineExceeded):
		return &exitError{code: exitNothing, msg: fmt.Sprintf("no reply to %s within %s; keep waiting with: collab wait --channel %s --reply-to %s",
			w.id, w.timeout, w.channel, w.id)}
	case errors.Is(err, context.Canceled):
		return &exitError{code: exitFailure, msg: fmt.Sprintf("interrupted while waiting for the reply to %s", w.id)}
	}
	return err
}

// print prints the reply: its text (its sender and verdict on stderr),
// or with json the reply with its verdict.
func (w replyWait) print(got service.Awaited, stdout, stderr io.Writer) error {
	m := got.Message
	if w.json {
		m.StripUnsigned() // as read --json: only what the sender signed
		data, err := m.EncodeVerdict(got.Verdict)
		if err != nil {
			return err
		}
		if w.answer != nil {
			return writeJSON(stdout, w.answer(data))
		}
		_, err = fmt.Fprintf(stdout, "%s\n", data)
		return err
	}
	fmt.Fprintf(stderr, "collab: reply %s from %s %s\n", tree.Printable(m.ID), tree.Printable(m.From), cmp.Or(got.Mark, "("+got.Verdict.String()+")"))
	_, err := fmt.Fprintln(stdout, m.Content.Text)
	return err
}

// lockedWriter serializes writes to w from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
