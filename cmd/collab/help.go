package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/collabdev/collab/docs"
	"github.com/spf13/pflag"
)

// helpFiles are the commands' help texts: help/NAME.txt for a command,
// help/NAME-SUB.txt for a subcommand with a text of its own. The
// reference docs/commands.md is made from what they print
// (TestCommandReference).
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns the help text of name ("task", "inbox-ack"). A missing
// file is this program's bug: it panics (TestHelpFiles finds it first).
func helpText(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(fmt.Sprintf("collab: no help text for %q: %v", name, err))
	}
	return string(b)
}

// setUsage makes fs's --help print text, the flags, then where the
// manual says more.
func setUsage(fs *pflag.FlagSet, text string) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), text)
		fs.PrintDefaults()
		if cmd, _, _ := strings.Cut(strings.TrimPrefix(fs.Name(), "collab "), " "); docOf[cmd] != "" {
			topic, _, _ := strings.Cut(docOf[cmd], ".md")
			fmt.Fprintf(fs.Output(), "\nMore: collab help %s (docs/%s)\n", topic, docOf[cmd])
		}
	}
}

// docOf is the page of the manual (docs/) that says more of a command.
var docOf = map[string]string{
	"init": "getting-started.md#deploy-on-a-shared-mount",
	"send": "messaging.md#collab-send", "read": "messaging.md#collab-read", "who": "messaging.md#collab-who",
	"status": "messaging.md#collab-status", "watch": "messaging.md#collab-watch", "jobs": "messaging.md#collab-jobs",
	"archive": "messaging.md#big-channels", "agent": "messaging.md#collab-who", "join": "join.md#join-from-your-terminal",
	"wait": "workspace.md#delegation", "inbox": "workspace.md#inbox", "doc": "workspace.md#shared-documents",
	"task": "workspace.md#task-board", "delegate": "workspace.md#delegating-into-worktrees", "resume": "workspace.md#delegating-into-worktrees",
	"run": "workflows.md#workflows", "start": "workflows.md#workflows", "stop": "workflows.md#workflows", "ls": "workflows.md#workflows",
	"mcp": "mcp.md#mcp-server", "serve": "dashboard.md#dashboard",
	"key": "security.md#keys-and-signatures", "verify": "security.md#keys-and-signatures",
	"nats": "remote.md#nats-the-fast-path-optional", "bridge": "remote.md#hosts-without-the-mount", "outbox": "remote.md#using-a-remote-host",
}

// runHelp is 'collab help [TOPIC]': the commands, a command's help, or a
// page of the manual.
func runHelp(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	switch {
	case len(args) == 0:
		usage(stdout)
		return nil
	case len(args) > 1:
		return usageErrorf("help: give one topic or command")
	}
	for _, c := range commands() {
		if c.name == args[0] {
			if err := c.run(ctx, []string{"--help"}, getenv, strings.NewReader(""), stdout, stdout); !errors.Is(err, pflag.ErrHelp) {
				return err
			}
			return nil
		}
	}
	page, ok := docs.Page(args[0])
	if !ok {
		return usageErrorf("help: no command or topic %q; topics: %s", args[0], strings.Join(docs.Topics(), ", "))
	}
	_, err := stdout.Write(page)
	return err
}
