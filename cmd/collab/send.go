package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/delegate"
	"github.com/spf13/pflag"
)

// sendOptions are send's flags.
type sendOptions struct {
	agent, ch, to, text, code, typ, replyTo *string
	artifacts                               *[]string
	priority, expire                        *string
	asJSON, wait                            *bool
	timeout, poll                           *time.Duration
	tf                                      trustFlags
	*common
}

func sendFlags(fs *pflag.FlagSet) *sendOptions {
	c := &common{fs: fs}
	o := &sendOptions{
		agent:     agentFlag(fs, "f", "sender agent ID", true, "from"),
		ch:        channelFlag(fs, "channel"),
		to:        fs.StringP("to", "t", channel.Broadcast, `recipient agent ID, NAME@INSTANCE, or "all"`),
		text:      fs.String("text", "", `message text ("-" reads standard input)`),
		code:      fs.StringP("code", "c", "", "code block to attach"),
		priority:  fs.String("priority", "", "high, normal or low: where the message goes in the addressee's inbox and watcher queue (default: by its words)"),
		expire:    fs.String("expire-after", "", "if no watcher claims the message within this long (10m, 2h; at most 24h), its sender gets a delivery report that it expired (default: the channel's setting, else never)"),
		artifacts: fs.StringArray("artifact", nil, "file to refer to, repeatable: its path, size and sha256 go in content.artifacts (the file is not copied)"),
		typ:       fs.String("type", "chat", "message type (chat, task_assign, task_result, incident, …)"),
		replyTo:   fs.String("in-reply-to", "", "id of the message this answers"),
		asJSON:    fs.Bool("json", false, "print the whole message as JSON instead of its id (with --wait: the reply)"),
		wait:      fs.Bool("wait", false, "wait for the reply and print it (exit 3 on timeout)"),
		timeout:   fs.Duration("timeout", defaultWaitTimeout, "with --wait: give up after this long (0: wait until interrupted)"),
		poll:      fs.Duration("poll", delegate.DefaultPoll, "with --wait: how often to look for the reply"),
		tf:        addTrustFlags(c), common: c,
	}
	c.add(withKey, withNATS, withRemote, withRoot)
	return o
}

// check refuses the flags that do not go together.
func (o *sendOptions) check(fs *pflag.FlagSet) error {
	// NAME@INSTANCE finds its instance's channel by itself (not to wait
	// on: the wait starts before the post).
	if *o.ch != "" || !strings.Contains(*o.to, "@") || *o.wait {
		if err := checkChannel("send", *o.ch); err != nil {
			return err
		}
	}
	if fs.Changed("timeout") && !*o.wait {
		return usageErrorf("send: --timeout needs --wait")
	}
	if *o.timeout < 0 || *o.poll <= 0 {
		return usageErrorf("send: --timeout must not be negative and --poll must be positive")
	}
	return nil
}

func runSend(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("send", helpText("send"), stderr)
	o := sendFlags(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	root := o.tree(getenv)
	from, err := actingAgent(ctx, "send", "sender", *o.agent)
	if err != nil {
		return err
	}
	if err := o.check(fs); err != nil {
		return err
	}
	// Before the message is sent: how --wait will judge the reply.
	var judge delegate.Options
	if *o.wait {
		if judge, err = o.tf.judge("send", root, stderr); err != nil {
			return err
		}
	}
	body, err := messageText(fs.Changed("text"), *o.text, fs.Args(), stdin)
	if err != nil {
		return err
	}
	arts, err := service.FileArtifacts(*o.artifacts)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	signer, err := signing.LoadAgentKey(o.keyPath(), from, getenv)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	// Before the file: bad NATS credentials fail before anything is sent.
	sp := o.spec(getenv)
	sp.agent, sp.needKey, sp.nats = from, true, true
	return useService(ctx, sp, getenv, stderr, func(svc *openedService) error {
		// Inside a watcher's model run the message is one hop deeper than the
		// one being answered; outside a run it is 0.
		actor := service.Actor{Name: from, Signer: signer, Hops: runenv.RunHops(getenv)}
		req := service.PostRequest{Channel: *o.ch, To: *o.to, Text: body, Code: *o.code, Type: *o.typ, InReplyTo: *o.replyTo, Artifacts: arts, Priority: *o.priority, ExpireAfter: *o.expire}
		if *o.wait {
			judge.Poll = *o.poll
			return askSent(ctx, svc, actor, req, o, judge, stdout, stderr)
		}
		res, err := svc.Post(ctx, actor, req)
		if err != nil {
			return svc.fail("send", err)
		}
		sendWarnings(res, stderr)
		return printSent(stdout, &res.Message, *o.asJSON)
	})
}

// askSent is send --wait: the post, then the reply (service.Ask), the
// delivery states told as they change, judged as judge says.
func askSent(ctx context.Context, svc *openedService, actor service.Actor, req service.PostRequest, o *sendOptions, judge delegate.Options, stdout, stderr io.Writer) error {
	rw := replyWait{root: svc.root, timeout: *o.timeout, opt: judge, json: *o.asJSON, remote: svc.Remote()}
	await, stderr := rw.request(stderr)
	sent := false
	_, got, err := service.Ask(ctx, svc, actor, service.AskRequest{Post: req, Await: await, Track: true, Sent: func(p service.Posted) {
		sent, rw.channel, rw.id = true, p.Message.SessionID, p.Message.ID
		sendWarnings(p, stderr)
		fmt.Fprintf(stderr, "collab: sent %s; waiting for the reply\n", p.Message.ID)
	}})
	if !sent {
		return svc.fail("send", err)
	}
	return rw.done(got, err, stdout, stderr)
}

// sendWarnings prints what a post passed over.
func sendWarnings(p service.Posted, stderr io.Writer) {
	for _, w := range p.Warnings {
		fmt.Fprintf(stderr, "collab: warning: %s\n", w)
	}
}

// printSent prints what send prints for the message it sent: its id, or
// with asJSON its file's JSON.
func printSent(stdout io.Writer, m *channel.Message, asJSON bool) error {
	data := []byte(m.ID)
	if asJSON {
		var err error
		if data, err = m.Encode(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(stdout, "%s\n", data)
	return err
}

// messageText picks the text from --text, the positional words or stdin;
// text from standard input loses its final newlines.
func messageText(textSet bool, text string, words []string, stdin io.Reader) (string, error) {
	text, from, err := readText("send", textSet, text, words, stdin, channel.MaxMessageSize, "message")
	switch {
	case err != nil:
		return "", err
	case from == textNone:
		return "", usageErrorf("send: no text: use --text, words, or - for standard input")
	case from == textStdin:
		text = strings.TrimRight(text, "\n")
	}
	if strings.TrimSpace(text) == "" {
		return "", usageErrorf("send: the message text is empty")
	}
	return text, nil
}
