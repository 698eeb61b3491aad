package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// defaultWaitTimeout bounds send --wait and wait unless --timeout says
// otherwise.
const defaultWaitTimeout = 10 * time.Minute

// waitUsage is wait's help, before its flags.
const waitUsage = `Usage: collab wait --reply-to ID [--channel C] [--from B] [--timeout D] [--json]

Wait for the reply to a message (the first message whose in_reply_to is ID)
and print its text. Exit 0 with the reply, 3 when none came within
--timeout.

A reply the trust policy refuses (--trust known, the default: one in the
name of an agent with a trusted key that does not verify) is reported on
stderr and passed over while the real one is awaited. The reply's sender
and verdict are printed on stderr ("collab: reply ID from codex
(verified)"); --json adds "verdict" as read --json does.

Flags:
`

func runWait(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("wait", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, waitUsage)
		fs.PrintDefaults()
	}
	replyTo := fs.String("reply-to", "", "id of the message whose reply to wait for")
	ch := channelFlag(fs, "channel")
	from := fs.String("from", "", "only a reply from this agent")
	timeout := fs.Duration("timeout", defaultWaitTimeout, "give up after this long (0: wait until interrupted)")
	poll := fs.Duration("poll", delegate.DefaultPoll, "how often to look at the channel")
	asJSON := fs.Bool("json", false, `print the whole reply as JSON, with its "verdict"`)
	tf := addTrustFlags(fs)
	nf := addNATSFlags(fs)
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("wait: unexpected argument %q", fs.Arg(0))
	}
	if err := checkChannel("wait", *ch); err != nil {
		return err
	}
	if *replyTo == "" {
		return usageErrorf("wait: --reply-to is required")
	}
	if _, err := channel.ParseID(*replyTo); err != nil {
		return usageErrorf("wait: --reply-to %q is not a message id", *replyTo)
	}
	if *from != "" {
		if err := tree.CheckName("agent", *from); err != nil {
			return usageErrorf("wait: %v", err)
		}
	}
	if *timeout < 0 || *poll <= 0 {
		return usageErrorf("wait: --timeout must not be negative and --poll must be positive")
	}
	root := tree.Resolve(*rootf, getenv)
	w := replyWait{root: root, channel: *ch, id: *replyTo, timeout: *timeout,
		opt: delegate.Options{From: *from, Poll: *poll}, json: *asJSON}
	if err := w.judgeBy("wait", tf, stderr); err != nil {
		return err
	}
	svc, err := openService(ctx, serviceSpec{cmd: "wait", root: root}, getenv, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	w.await = func(ctx context.Context, opt delegate.Options) (channel.Message, error) {
		return svc.WaitReply(ctx, *ch, *replyTo, opt)
	}
	return w.run(ctx, nf, getenv, stdout, stderr)
}

// trustFlags are --trust and --keyring of a command that waits for a
// reply: which replies it takes, by the verdict on their signature.
type trustFlags struct {
	trust, keyring *string
}

func addTrustFlags(fs *pflag.FlagSet) trustFlags {
	trust := fs.String("trust", string(signing.DefaultPolicy), "which replies to take: any, known (a reply in the name of an agent with a trusted key must verify) or signed (verified replies only)")
	fromEnv(fs, "trust", envTrust)
	return trustFlags{trust: trust, keyring: keyringFlag(fs)}
}

// judgeBy sets the trust policy and keyring the wait judges replies by,
// from tf (nil: $COLLAB_TRUST and $COLLAB_KEYRING, for a command that
// has no such flags). Under known and signed, a keyring that someone
// other than its admin could rewrite is refused, as the watcher refuses
// it, unless it is empty; under any it is only warned about.
func (w *replyWait) judgeBy(cmd string, tf trustFlags, stderr io.Writer) error {
	trust, err := signing.ParsePolicy(*tf.trust)
	if err != nil {
		return usageErrorf("%s: --%v", cmd, err)
	}
	ring := keyring.In(w.root, *tf.keyring)
	if err := ring.Check(keyring.Owner(string(w.root)), true); err != nil {
		if trust != signing.Any && !ring.Empty() {
			return usageErrorf("%s: refusing the keyring %s (--trust %s): %v; as the tree's admin, chown it and chmod go-w its folder and files, or wait with --trust any",
				cmd, ring.Dir(), trust, err)
		}
		if !errors.Is(err, iofs.ErrNotExist) { // no keyring here (a remote host): nothing to verify with
			fmt.Fprintf(stderr, "collab: warning: %v\n", err)
		}
	}
	w.opt.Trust, w.opt.Verifier = trust, signing.NewVerifier(ring).Forgetful()
	return nil
}

// noticeWait is how long send --remote --wait looks on the stream for a
// guard's notice once every addressee is refused.
const noticeWait = time.Second

// replyWait is one wait for a reply, as send --wait and wait do it.
type replyWait struct {
	root    tree.Root
	channel string
	id      string
	timeout time.Duration // 0: none
	opt     delegate.Options
	json    bool
	bus     *natsbus.Bus    // if set, announcements wake the wait; else connect when configured
	reader  *channel.Reader // if set, from delegate.Before the request was posted
	// track: print each addressee's change of delivery state on stderr
	// and end with exit 4 once every addressee is refused, failed or
	// undeliverable (send --wait). Guard notices are then not replies.
	track bool
	// await and status, if set, stand for the tree (send --wait, through
	// the service): await waits for the reply, status is the message's
	// delivery status. remote: they go through a bridge.
	await  func(ctx context.Context, opt delegate.Options) (channel.Message, error)
	status func(ctx context.Context) (delivery.Status, error)
	remote bool
}

// forgedReply is what a wait prints on stderr of a reply its trust
// policy refused.
func forgedReply(m *channel.Message, v signing.Verdict) string {
	return fmt.Sprintf("collab: ignored a reply in %s's name that does not verify (%s); still waiting", tree.Printable(m.From), v)
}

// run waits and prints the reply's text (or the reply as JSON). NATS, if
// configured, wakes it as soon as a message is announced.
func (w replyWait) run(ctx context.Context, nf *natsFlags, getenv env, stdout, stderr io.Writer) error {
	if w.opt.Verifier == nil {
		// A command without --trust and --keyring (delegate --wait).
		trust, ring := cmp.Or(getenv(envTrust), string(signing.DefaultPolicy)), getenv(envKeyring)
		if err := w.judgeBy("wait", trustFlags{trust: &trust, keyring: &ring}, stderr); err != nil {
			return err
		}
	}
	// The status tracker writes on stderr too, from its goroutine.
	stderr = &lockedWriter{w: stderr}
	w.opt.Forged = func(m *channel.Message, v signing.Verdict) { fmt.Fprintln(stderr, forgedReply(m, v)) }
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	unsubscribe, err := w.subscribe(ctx, nf, getenv, stderr)
	if err != nil {
		return err
	}
	defer unsubscribe()
	var refused <-chan string
	var notices []string // guard notices in reply, when tracking
	stopTrack := func() {}
	if w.track {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		w.opt.Skip = func(m *channel.Message) bool {
			if !delivery.IsNotice(m) {
				return false
			}
			if m.Metadata.InReplyTo == w.id {
				notices = append(notices, m.Content.Text)
			}
			return true
		}
		refused = w.trackStatus(ctx, cancel, stderr)
		stopTrack = cancel
	}
	var m channel.Message
	switch {
	case w.await != nil:
		m, err = w.await(ctx, w.opt)
	case w.reader != nil:
		m, err = delegate.WaitWith(ctx, w.reader, w.id, w.opt)
	default:
		m, err = delegate.Wait(ctx, w.root, w.channel, w.id, w.opt)
	}
	stopTrack()
	if refused != nil {
		if why, ok := <-refused; ok && err != nil {
			return w.refusedAll(ctx, why, &notices, stdout)
		}
	}
	if err != nil {
		return w.failed(err)
	}
	return w.print(m, stdout, stderr)
}

// refusedAll ends a wait whose every addressee refused, failed or is
// undeliverable (why says so): exit 4, after the guards' notices (the
// wait's Skip adds to them).
func (w replyWait) refusedAll(ctx context.Context, why string, notices *[]string, stdout io.Writer) error {
	// Every addressee refused, failed or is undeliverable. A
	// watcher posts a guard's notice before it records the
	// refusal: one more look (ctx is done) finds it, and its
	// text is printed as a reply's would be.
	switch {
	case w.reader != nil:
		delegate.WaitWith(ctx, w.reader, w.id, w.opt)
	case w.await != nil && !w.remote:
		w.await(ctx, w.opt) // one more scan of the mount
	case w.await != nil:
		// From the stream: what has landed comes again at once
		// (a forgery reported already too); a second for one
		// still on its way.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noticeWait)
		look := w.opt
		look.Forged = nil
		w.await(lctx, look)
		cancel()
	}
	for _, text := range *notices { // those the last look found too
		fmt.Fprintln(stdout, text)
	}
	return &exitError{code: exitRefused, msg: why}
}

// subscribe subscribes to the NATS announcements of the channel, when
// NATS is configured (a bus of the command's, else one of its own on the
// mount), so a reply announced is read at once; the function returned
// ends it.
func (w *replyWait) subscribe(ctx context.Context, nf *natsFlags, getenv env, stderr io.Writer) (func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if o, ok := nf.options(getenv, natsbus.ConnName("waiter", hostname()), commandLogger(stderr)); ok && w.bus == nil && !w.remote {
		bus, err := connectOptional(ctx, o, stderr)
		if err != nil {
			return stop, fmt.Errorf("wait: %w", err)
		}
		if bus != nil {
			stops = append(stops, bus.Close)
		}
		w.bus = bus
	}
	if bus := w.bus; bus != nil {
		wake := make(chan string, 64)
		sub, err := bus.Subscribe([]string{w.channel}, func(m channel.Message) {
			if m.Metadata.InReplyTo != w.id {
				return
			}
			select {
			case wake <- m.File:
			default: // the next poll finds it
			}
		})
		if err != nil {
			fmt.Fprintf(stderr, "collab: warning: waiting by polling only: %v\n", err)
		} else {
			stops = append(stops, sub.Stop)
			w.opt.Wake = wake
		}
	}
	return stop, nil
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

// print prints the reply m: its text (its sender and verdict on stderr),
// or with json the reply with its verdict.
func (w replyWait) print(m channel.Message, stdout, stderr io.Writer) error {
	verdict, _ := w.opt.Judge(&m, w.channel)
	if w.json {
		m.StripUnsigned() // as read --json: only what the sender signed
		data, err := withVerdict(&m, verdict)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", data)
		return err
	}
	mark, _ := w.opt.Verifier.Mark(m.From, verdict)
	fmt.Fprintf(stderr, "collab: reply %s from %s %s\n", tree.Printable(m.ID), tree.Printable(m.From), cmp.Or(mark, "("+verdict.String()+")"))
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

// trackStatus polls the message's delivery status at the wait's poll
// interval until ctx ends, printing each addressee's new state on
// stderr. When every addressee is in a final bad state it sends why on
// the channel returned and cancels the wait; the channel is closed when
// the polling ends.
func (w replyWait) trackStatus(ctx context.Context, cancel context.CancelFunc, stderr io.Writer) <-chan string {
	out := make(chan string, 1)
	status := w.status
	if status == nil {
		m, err := channel.Lookup(w.root, w.channel, w.id)
		if err != nil {
			close(out)
			return out
		}
		opt := delivery.Options{Host: hostname()}
		status = func(context.Context) (delivery.Status, error) { return delivery.For(w.root, w.channel, &m, opt), nil }
	}
	go func() {
		defer close(out)
		tick := time.NewTicker(w.opt.Poll)
		defer tick.Stop()
		last := map[string]string{}
		for {
			st, err := status(ctx)
			if err != nil {
				st = delivery.Status{} // not now (a bridge away): the next poll
			}
			now := time.Now()
			for _, a := range st.Addressees {
				if last[a.Agent] != a.State {
					last[a.Agent] = a.State
					fmt.Fprintf(stderr, "collab: %s: %s\n", a.Agent, tree.Printable(a.Describe(now)))
				}
			}
			if st.AllBad() {
				var each []string
				for _, a := range st.Addressees {
					each = append(each, a.Agent+" "+tree.Printable(a.Describe(now)))
				}
				out <- fmt.Sprintf("no answer will come to %s: %s", w.id, strings.Join(each, "; "))
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return out
}
