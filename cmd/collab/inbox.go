package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

func runInbox(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "ack" {
		return runInboxAck(ctx, args[1:], getenv, stdout, stderr)
	}
	fs := cmdFlags("inbox", helpText("inbox"), stderr)
	agent, chans, asJSON, rootf := inboxFlags(fs)
	peek := fs.Bool("peek", false, "show without acknowledging")
	limit := fs.IntP("limit", "n", defaultPeekLimit, "with --peek: only the newest N unread messages (0: all)")
	rf := addRemoteFlags(fs)
	nf := addNATSFlags(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("inbox: unexpected argument %q (subcommand: ack)", fs.Arg(0))
	}
	if fs.Changed("limit") && !*peek {
		return usageErrorf("inbox: --limit needs --peek (a check acknowledges, and so shows, every unread message)")
	}
	if *limit < 0 {
		return usageErrorf("inbox: --limit must not be negative")
	}
	svc, err := openInboxService(ctx, "inbox", rf, nf, *rootf, *agent, getenv, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	res, err := svc.Inbox(ctx, service.InboxRequest{Agent: svc.agent, Channels: *chans, Peek: *peek, Limit: *limit})
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(stderr, "collab: %s\n", n)
	}
	for _, it := range res.Items {
		if err := printItem(stdout, it, *asJSON); err != nil {
			return err
		}
	}
	if res.More > 0 {
		fmt.Fprintf(stderr, "collab: showing the newest %d unread; up to %d more unread (--limit 0 shows all)\n", len(res.Items), res.More)
	}
	return nil
}

// defaultPeekLimit is how many unread messages inbox --peek shows.
const defaultPeekLimit = 20

func runInboxAck(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	fs := cmdFlags("inbox ack", helpText("inbox-ack"), stderr)
	agent, chans, asJSON, rootf := inboxFlags(fs)
	untilf := fs.String("until", "", "acknowledge up to this message `ID` or RFC 3339 time")
	rf := addRemoteFlags(fs)
	nf := addNATSFlags(fs)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	if *untilf == "" {
		return usageErrorf("inbox ack: no --until: give a message id or a time")
	}
	svc, err := openInboxService(ctx, "inbox ack", rf, nf, *rootf, *agent, getenv, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	res, err := svc.AckInbox(ctx, service.AckRequest{Agent: svc.agent, Channels: *chans, Until: *untilf})
	if err != nil {
		// An id in none of the channels: exit 1, as this command documents.
		return exitAs(exitFailure, fmt.Errorf("inbox ack: %w", err), errkind.NotFound)
	}
	return printAcked(stdout, res, *asJSON)
}

// printAcked prints what inbox ack acknowledged; through a bridge, in
// its one channel.
func printAcked(stdout io.Writer, res service.Acked, asJSON bool) error {
	out := map[string]any{"acknowledged": res.N, "until": res.Until.String()}
	where := ""
	if res.Channel != "" {
		out["channel"], where = res.Channel, " in channel "+res.Channel
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(out)
	}
	_, err := fmt.Fprintf(stdout, "acknowledged %d message(s)%s up to %s\n", res.N, where, res.Until)
	return err
}

// openInboxService is the service of inbox and inbox ack, as the agent
// actorName gives.
func openInboxService(ctx context.Context, cmd string, rf *remoteFlags, nf *natsFlags, rootf, agent string, getenv env, stderr io.Writer) (*openedService, error) {
	agent, err := actorName(ctx, cmd, rf.on, agent)
	if err != nil {
		return nil, err
	}
	return openService(ctx, serviceSpec{cmd: cmd, agent: agent, root: tree.Resolve(rootf, getenv), rf: rf, nf: nf}, getenv, stderr)
}

func inboxFlags(fs *pflag.FlagSet) (agent *string, chans *[]string, asJSON *bool, rootf *string) {
	agent = agentFlag(fs, "", "whose inbox", true)
	chans = fs.StringSlice("channel", nil, "only this channel (repeatable; default: every channel)")
	asJSON = fs.Bool("json", false, `print one JSON object per line: {"channel", "priority", "message"}`)
	rootf = rootFlag(fs)
	return
}

// printItem prints one inbox item as a transcript entry or a JSON line.
func printItem(w io.Writer, it inbox.Item, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(it)
	}
	m := &it.Message
	var b strings.Builder
	fmt.Fprintf(&b, "%s  #%s  %s → %s  %s", m.Time().Format("2006-01-02 15:04:05"), it.Channel, tree.Printable(workflow.Display(m.From)), tree.Printable(workflow.Display(m.To)), tree.Printable(m.ID))
	if it.Priority == inbox.High {
		b.WriteString("  [high]")
	}
	b.WriteByte('\n')
	indent(&b, m.Content.Text)
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}
