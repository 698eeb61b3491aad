// Command collab runs agents that talk through files in a shared folder.
// "collab help" lists its commands (commands below), "collab COMMAND
// --help" gives a command's flags (help/NAME.txt; docs/commands.md is
// generated from them); flags.go states the conventions every
// command follows, and exitCode the exit codes: 0 ok, 1 failure, 2 usage
// error, 3 nothing there or a timeout, 4 refused, 5 queued in a remote
// host's outbox.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/docs"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
)

// memoryLimit is collab's soft memory limit (runtime/debug; GOMEMLIMIT in
// the environment replaces it). It only makes the collector run sooner as
// the heap nears it; it never fails an allocation.
const memoryLimit = 24 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		// Collect garbage before the heap doubles: a watcher lives long,
		// and a command that reads 1 MB messages makes a few MB of it.
		debug.SetMemoryLimit(memoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Every signal also comes here, counted from the first: registered
	// now, a second signal sent right after the first is never lost.
	sig := make(chan os.Signal, 3)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	h := &hurry{c: make(chan struct{})}
	go func() {
		// The first signal asked for a clean stop (NotifyContext cancels
		// ctx). A second one ends the program at once: a watcher first
		// kills its CLI's process group and writes OFFLINE (it took the
		// hurry); a third does not wait.
		<-sig
		s := <-sig
		if h.taken.Load() {
			close(h.c)
			s = <-sig
		}
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
	runCtx := withLogin(context.WithValue(ctx, hurryKey{}, h), osLogin)
	err := telemetry.Run(runCtx, os.Args[1:], env(os.Getenv), os.Stdin, os.Stdout, os.Stderr, run)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// hurry is closed on a second signal, if a command took it to end at once
// but cleanly (see watcher.Config.Hurry).
type hurry struct {
	c     chan struct{}
	taken atomic.Bool
}

type hurryKey struct{}

// takeHurry returns the channel closed on a second signal, or nil when
// ctx carries none (tests calling run).
func takeHurry(ctx context.Context) <-chan struct{} {
	h, _ := ctx.Value(hurryKey{}).(*hurry)
	if h == nil {
		return nil
	}
	h.taken.Store(true)
	return h.c
}

// Exit codes, the same for every command.
const (
	exitFailure = 1 // a runtime failure
	exitUsage   = 2 // bad flags or arguments
	exitNothing = 3 // nothing there, or nothing came in time
	exitRefused = 4 // refused: held by another, or changed since read
	exitQueued  = 5 // kept in a remote host's outbox, sent later
)

// exitError ends the program with a code and, if msg is set, a message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageErrorf reports bad usage: exit code 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "collab:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "collab:", err)
	if k, ok := errkind.Carried(err); ok && kindExit[k] != 0 {
		return kindExit[k]
	}
	return exitFailure
}

// kindExit maps the service layer's error kinds to exit codes, once (see
// package service); a kind not here exits 1.
var kindExit = map[errkind.Kind]int{
	errkind.Invalid: exitUsage, errkind.NotFound: exitNothing, errkind.Timeout: exitNothing,
	errkind.Conflict: exitRefused, errkind.Forbidden: exitRefused, errkind.Queued: exitQueued,
}

// env is how commands read the environment; tests pass a map's lookup.
type env func(string) string

// runFunc runs a command or subcommand with its arguments.
type runFunc func(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error

type command struct {
	name    string
	summary string
	run     runFunc
}

// subFunc runs subcommand sub of a command with its arguments.
type subFunc func(ctx context.Context, sub string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error

// same maps each of names to run.
func same(run subFunc, names ...string) map[string]subFunc {
	m := map[string]subFunc{}
	for _, n := range names {
		m[n] = run
	}
	return m
}

// subcommands is the run of command cmd whose first argument names one of
// subs, run with the rest. With none named it runs def, or when def is
// nil: no argument is cmd's help on stderr and exit 2, -h, --help or help
// its help, another an unknown command.
func subcommands(cmd string, subs map[string]subFunc, def runFunc) runFunc {
	return func(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
		if len(args) > 0 && subs[args[0]] != nil {
			return subs[args[0]](ctx, args[0], args[1:], getenv, stdin, stdout, stderr)
		}
		switch {
		case def != nil:
			return def(ctx, args, getenv, stdin, stdout, stderr)
		case len(args) == 0:
			fmt.Fprint(stderr, helpText(cmd))
			return &exitError{code: exitUsage}
		case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
			fmt.Fprint(stdout, helpText(cmd))
			return nil
		}
		return usageErrorf("%s: unknown command %q; run 'collab %s --help'", cmd, args[0], cmd)
	}
}

func commands() []command {
	return []command{
		{"init", "create the shared tree's folders, for a shared group", runInit},
		{"send", "post a message to a channel", runSend},
		{"read", "show a channel as a transcript", runRead},
		{"who", "show which agents are awake", runWho},
		{"watch", "run an agent's watcher daemon", runWatch},
		{"join", "run your own Claude Code or Gemini CLI session as an agent on the bus", runJoin},
		{"jobs", "list, show or stop the watchers' model runs", runJobs},
		{"archive", "move a channel's old messages into its archive", runArchive},
		{"wait", "wait for the reply to a message and print it", runWait},
		{"status", "show where a message stands for each agent it is for", runStatus},
		{"task", "the channel's task board: add, list, claim, next, done", runTask},
		{"agent", "register or unregister an agent that has no watcher", runAgent},
		{"mcp", "serve the bus to a model CLI over MCP (stdio)", runMCP},
		{"nats", "create the NATS stream, or compare it with a channel", runNATS},
		{"inbox", "show and acknowledge the messages for an agent", runInbox},
		{"doc", "read and edit a channel's shared documents", runDoc},
		{"key", "make, trust, revoke and list the senders' signing keys", runKey},
		{"verify", "check the signatures of a channel's messages", runVerify},
		{"run", "run a workflow file's team until it is done", runRun},
		{"start", "start a workflow file's team and keep it running", runStart},
		{"stop", "stop one agent of a workflow instance, or whole instances", runStop},
		{"ls", "list the workflow instances", runLs},
		{"delegate", "hand work to a new agent in its own git worktree, and follow it", runDelegate},
		{"resume", "restart this host's delegated agents whose watcher is gone", runResume},
		{"serve", "serve a dashboard and a JSON API to people over HTTP", runServe},
		{"bridge", "serve the tree over NATS to hosts without the mount", runBridge},
		{"outbox", "list or resend a remote host's writes not yet acknowledged", runOutbox},
	}
}

func run(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "help" {
		return runHelp(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return &exitError{code: exitUsage}
		}
		return nil
	}
	if args[0] == "join-hook" { // run by a joined CLI (collab join): not a person's command
		return runJoinHook(ctx, args[1:], getenv, stdin, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], getenv, stdin, stdout, stderr)
		}
	}
	return usageErrorf("unknown command %q; run 'collab help'", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "collab: agents that talk through files in a shared folder")
	fmt.Fprintln(w, "\nUsage: collab COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'collab COMMAND --help' for a command's flags, and 'collab help TOPIC' for a\npage of the manual:", strings.Join(docs.Topics(), ", ")+".")
}
