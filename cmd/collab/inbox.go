package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

var runInbox = subcommands("inbox", map[string]subFunc{"ack": runInboxAck}, runInboxShow)

func runInboxShow(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("inbox", helpText("inbox"), stderr)
	c, chans, asJSON := inboxFlags(fs)
	peek := fs.Bool("peek", false, "show without acknowledging")
	limit := fs.IntP("limit", "n", defaultPeekLimit, "with --peek: only the newest N unread messages (0: all)")
	c.add(withRemote, withNATS)
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
	return c.useActor(ctx, getenv, stderr, func(svc *openedService) error {
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
	})
}

// defaultPeekLimit is how many unread messages inbox --peek shows.
const defaultPeekLimit = 20

func runInboxAck(ctx context.Context, _ string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("inbox ack", helpText("inbox-ack"), stderr)
	c, chans, asJSON := inboxFlags(fs)
	untilf := fs.String("until", "", "acknowledge up to this message `ID` or RFC 3339 time")
	c.add(withRemote, withNATS)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	if *untilf == "" {
		return usageErrorf("inbox ack: no --until: give a message id or a time")
	}
	return c.useActor(ctx, getenv, stderr, func(svc *openedService) error {
		res, err := svc.AckInbox(ctx, service.AckRequest{Agent: svc.agent, Channels: *chans, Until: *untilf})
		if err != nil {
			// An id in none of the channels: exit 1, as this command documents.
			return exitAs(exitFailure, fmt.Errorf("inbox ack: %w", err), errkind.NotFound)
		}
		return printAcked(stdout, res, *asJSON)
	})
}

// printAcked prints what inbox ack acknowledged; through a bridge, in
// its one channel.
func printAcked(stdout io.Writer, res service.Acked, asJSON bool) error {
	out := map[string]any{"acknowledged": res.N, "until": res.Until.String()}
	where := ""
	if res.Channel != "" {
		out["channel"], where = res.Channel, " in channel "+res.Channel
	}
	return showLine(stdout, asJSON, out, fmt.Sprintf("acknowledged %d message(s)%s up to %s\n", res.N, where, res.Until))
}

func inboxFlags(fs *pflag.FlagSet) (c *common, chans *[]string, asJSON *bool) {
	c = &common{fs: fs, agent: agentFlag(fs, "", "whose inbox", true)}
	chans = fs.StringSlice("channel", nil, "only this channel (repeatable; default: every channel)")
	asJSON = fs.Bool("json", false, `print one JSON object per line: {"channel", "priority", "message"}`)
	return c.add(withRoot), chans, asJSON
}

// printItem prints one inbox item as a transcript entry or a JSON line.
func printItem(w io.Writer, it inbox.Item, asJSON bool) error {
	return showLine(w, asJSON, it, service.InboxText(it))
}
