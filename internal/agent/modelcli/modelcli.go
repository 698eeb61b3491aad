// Package modelcli runs model CLIs (Claude Code, Codex, Gemini CLI, or any
// command) for the watcher: it turns a prompt into a process run and the
// process's output into a reply.
//
// # The command adapter
//
// [Command] runs any program. Its argument vector comes from a command line
// split into words the way a POSIX shell splits them (quotes, backslashes,
// $VAR from the environment), but it is never run by a shell: command
// substitution is refused and no message text is ever interpreted. The
// prompt goes to the program's standard input, unless an argument contains
// the placeholder {prompt}, in which case the prompt replaces the
// placeholder inside that one argument and standard input is /dev/null.
// Extra arguments (--cli-arg) are appended as they are, each exactly one
// argument.
//
// A run fails when the program exits non-zero, is killed (timeout, shutdown)
// or prints nothing but white space. The reply is standard output, capped
// and trimmed. Its events (Request.OnEvent, Response.Events) are started,
// each line of standard error as progress (cut at 1 KiB; at most
// [MaxCommandLines], then one "… N more lines"), and completed, or error
// with the exit status and the tail of standard error.
package modelcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/collabdev/collab/internal/plumbing/proc"
)

// Placeholder in an argument is replaced by the prompt.
const Placeholder = "{prompt}"

// ErrEmpty is returned when a CLI exits 0 but prints nothing.
var ErrEmpty = errors.New("modelcli: empty output")

// Request is one run of a model CLI.
type Request struct {
	Prompt  string
	Env     []string      // added to the inherited environment (docs/protocol.md#the-model-run variables)
	Dir     string        // working directory; "" is the watcher's
	Timeout time.Duration // 0: none
	// Session, when set, resumes that CLI session (adapters that have
	// sessions); a resume the CLI refuses is an error wrapping
	// ErrSessionGone, and the caller starts afresh.
	Session string
	// AllowTools are permission rules allowed for this run only, on top
	// of the adapter's own: the Allow of a [Question] an earlier run of
	// the session asked, granted by the answer. Adapters without
	// permission rules (command, codex, gemini) ignore them.
	AllowTools []string
	// OnEvent, when set, receives events as they happen, from the
	// adapter's goroutine.
	OnEvent func(Event)
	// OnStart, when set, is called with the CLI's pid, which is also its
	// process group's id, once it has started (proc.Spec.Started).
	OnStart func(pid int)
	// Ask, when set, puts a question the CLI asks mid-run (a live
	// session's permission request) to the person whose message the run
	// answers, and returns their answer; the run waits meanwhile. An
	// error (no answer in time, the run stopped) refuses. Without Ask, or
	// for adapters that cannot ask mid-run, the request is refused as a
	// per-message run refuses it.
	Ask func(ctx context.Context, q Question) (Answer, error)
}

// Response is what a run produced.
type Response struct {
	Text      string        // the reply
	Truncated bool          // output was over the cap and cut
	Stderr    string        // tail of standard error
	Duration  time.Duration // wall time of the run
	Session   string        // the CLI's session or thread id, to resume
	CostUSD   float64       // as reported by the CLI, 0 if not
	Usage     Usage
	Events    []Event   // every event of the run, in order
	Question  *Question // set when the CLI stopped to ask (needs_input)
}

// ErrSessionGone is wrapped when a session cannot be resumed.
var ErrSessionGone = errors.New("modelcli: session cannot be resumed")

// SplitCommand splits a command line into words as a shell would, without
// running one. env resolves $VAR (nil: no variables). Command substitution
// ($(…), `…`) is an error.
func SplitCommand(line string, env func(string) string) ([]string, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	words, err := shell.Fields(line, env)
	if err != nil {
		return nil, fmt.Errorf("command %q: %w", line, err)
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("command %q: no program", line)
	}
	return words, nil
}

// Command is the generic adapter: it runs Argv (plus Args) with the prompt
// on standard input or in place of {prompt}.
type Command struct {
	Argv      []string      // program and arguments
	Args      []string      // appended, each exactly one argument
	MaxOutput int           // stdout cap; default 1 MiB
	KillGrace time.Duration // SIGTERM to SIGKILL; default 5 s
}

// Argv returns the argument vector for prompt, and whether the prompt went
// into it (else it goes to standard input).
func (c *Command) argv(prompt string) ([]string, bool) {
	all := append(append([]string(nil), c.Argv...), c.Args...)
	inArg := false
	for i, a := range all {
		if strings.Contains(a, Placeholder) {
			all[i] = strings.ReplaceAll(a, Placeholder, prompt)
			inArg = true
		}
	}
	return all, inArg
}

// ReportsCost reports whether runs report what they cost (Response.CostUSD):
// a command's do not.
func (*Command) ReportsCost() bool { return false }

// Run runs the command once.
func (c *Command) Run(ctx context.Context, req Request) (Response, error) {
	if len(c.Argv) == 0 {
		return Response{}, errors.New("modelcli: no command")
	}
	argv, inArg := c.argv(req.Prompt)
	ev := &commandEvents{onEvent: req.OnEvent, now: time.Now}
	spec := proc.Spec{
		Argv:      argv,
		Env:       append(os.Environ(), req.Env...),
		Dir:       req.Dir,
		Timeout:   req.Timeout,
		KillGrace: c.KillGrace,
		MaxStdout: c.MaxOutput,
		Started: func(pid int) {
			if req.OnStart != nil {
				req.OnStart(pid)
			}
			ev.start(pid)
		},
		StderrLine: ev.line,
	}
	if !inArg {
		spec.Stdin = []byte(req.Prompt)
	}
	res, err := proc.Run(ctx, spec)
	if err == nil && strings.TrimSpace(string(res.Stdout)) == "" {
		err = ErrEmpty
	}
	resp := Response{
		Events:    ev.finish(res, err),
		Text:      strings.TrimSpace(string(res.Stdout)),
		Truncated: res.Truncated,
		Stderr:    string(res.StderrTail),
		Duration:  res.Duration,
	}
	return resp, err
}
