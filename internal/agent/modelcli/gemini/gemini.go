// Package gemini runs Gemini CLI for the watcher: one prompt in headless
// mode, its streamed JSON output turned into [modelcli.Event] values as
// they happen and into a [modelcli.Response].
//
// # Command line
//
// [Adapter.Run] executes, without a shell and with the prompt on standard
// input:
//
//	gemini --output-format stream-json --model gemini-2.5-pro --skip-trust
//	    --approval-mode auto_edit [--resume SESSION] [ARGS…] --prompt ""
//
// The flags, and why:
//
//   - Streamed JSON (--output-format stream-json): a JSON object a line:
//     init with the session id, the assistant's text in chunks, tool_use
//     and tool_result, and a last result line with the status and token
//     counts.
//   - A model, always (--model, Adapter.Model, default DefaultModel):
//     without one Gemini CLI first makes a routing call to pick a model.
//   - Trust (--skip-trust): headless Gemini CLI refuses to run in a folder
//     not marked trusted (exit 55); the watcher's working directory is the
//     operator's choice.
//   - Approval mode auto_edit (Adapter.ApprovalMode): file edits go ahead.
//     Headless Gemini CLI never asks: it offers the model only the tools
//     this mode allows without asking (read-only tools, plus the edit tools
//     in auto_edit; the shell only in "yolo", which turns every check off
//     and is for machines that are a sandbox already). "default" and
//     "plan" are stricter.
//   - Resume (--resume): [modelcli.Request.Session], the session id of an
//     earlier [modelcli.Response]. Sessions belong to a project, the
//     working directory: a resume in another one fails, and the watcher
//     starts afresh.
//   - The prompt (--prompt "" with the text on standard input): headless
//     mode, and no prompt is ever an argument. Gemini CLI appends the
//     (empty) --prompt to what it reads.
//
// Adapter.Args come before --prompt, each exactly one argument. A
// workflow agent's tools: become Args with [ToolArgs] (--allowed-tools:
// they run without asking); Gemini CLI has no flag that takes a tool
// away ([ToolLimits]).
//
// # Environment
//
// Added before the inherited environment, so an operator's own setting
// wins; Adapter.Env, then Request.Env, come after both:
//
//   - GEMINI_CLI_NO_RELAUNCH=true: Gemini CLI otherwise starts a second
//     node process with a larger heap, and its first one ignores SIGTERM;
//     one process is about 0.6 s faster and stops when told to.
//   - NO_COLOR=1: its error messages on standard error come without
//     colour codes.
//
// Usage statistics (sent to Google unless turned off) and auto-update
// checks can only be turned off in settings.json
// (privacy.usageStatisticsEnabled, general.enableAutoUpdate: false); the
// adapter does not touch settings.
//
// # Events
//
// init is [modelcli.EventStarted] (Text: the session id); the assistant's
// text chunks are joined into one [modelcli.EventProgress] per stretch of
// text, sent when something else happens (timed at its last chunk);
// tool_use is [modelcli.EventToolCall] (Tool: its name, Text: its command,
// file or pattern); Gemini CLI's own warnings (error lines) are progress
// events whose Text begins with "gemini" in square brackets. The result
// line ends the run with
// [modelcli.EventCompleted] or [modelcli.EventError]. Events carry the
// time their line arrived.
//
// The reply is the assistant's text after the last tool call. Gemini CLI
// reports no cost: CostUSD is 0 (the watcher prices the tokens, see
// internal/agent/pricing). Usage: Input is input tokens less cached ones,
// CacheRead the cached ones, Model init's model.
//
// Headless Gemini CLI never stops to ask, so Response.Question is never
// set; a model that asks the user in plain text is just answering.
//
// # Errors
//
// A result with status "error" fails the run with its message (the API's
// own message and status for an API error); so does a run without a
// result line (Gemini CLI exits 0 on SIGTERM, and with a small code for its
// own failures: 41 no authentication, 42 bad input, 55 untrusted folder),
// with the "Error…" line of standard error. Its exit status after an API
// error is the HTTP status mod 256. A resume Gemini CLI refuses ("Error
// resuming session") wraps [modelcli.ErrSessionGone]. A success without
// text is [modelcli.ErrEmpty]. Response.Stderr holds the tail of standard
// error.
package gemini

import (
	"context"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// Defaults for the zero values of Adapter fields.
const (
	DefaultModel        = "gemini-2.5-pro" // Gemini CLI 0.61's own default
	DefaultApprovalMode = "auto_edit"
)

// Env is what the adapter adds to the environment, before the inherited
// variables so that these win.
var Env = []string{"GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1"}

// Adapter runs Gemini CLI. The zero value runs "gemini" from PATH with the
// defaults described in the package documentation.
type Adapter struct {
	Bin          string   // program; "" is "gemini"
	Model        string   // --model; "" is DefaultModel
	Args         []string // added before --prompt, each exactly one argument
	ApprovalMode string   // --approval-mode; "" is DefaultApprovalMode
	Env          []string // KEY=VALUE, added after the inherited environment

	MaxOutput int           // longest stdout line and reply kept; 0: proc.DefaultMaxStdout
	KillGrace time.Duration // SIGTERM to SIGKILL; 0: proc.DefaultKillGrace

	now     func() time.Time // the clock of event times; nil: time.Now
	environ []string         // the inherited environment; nil: os.Environ()
}

// argv returns the command line for a run resuming session ("" for a
// fresh one).
func (a *Adapter) argv(session string) []string {
	bin, model, mode := a.Bin, a.Model, a.ApprovalMode
	if bin == "" {
		bin = "gemini"
	}
	if model == "" {
		model = DefaultModel
	}
	if mode == "" {
		mode = DefaultApprovalMode
	}
	argv := []string{bin, "--output-format", "stream-json", "--model", model, "--skip-trust", "--approval-mode", mode}
	if session != "" {
		argv = append(argv, "--resume", session)
	}
	argv = append(argv, a.Args...)
	return append(argv, "--prompt", "")
}

// env returns the child's whole environment.
func (a *Adapter) env(req []string) []string {
	return modelcli.Environ(Env, a.environ, a.Env, req)
}

func (a *Adapter) maxOutput() int {
	if a.MaxOutput > 0 {
		return a.MaxOutput
	}
	return proc.DefaultMaxStdout
}

// ReportsCost reports whether runs report what they cost: Gemini CLI's do
// not (CostUSD is 0).
func (*Adapter) ReportsCost() bool { return false }

// ReportsTokens reports whether runs report the tokens they used: Gemini
// CLI's do (Response.Usage, with its model).
func (*Adapter) ReportsTokens() bool { return true }

// Run runs Gemini CLI once on req.Prompt, resuming req.Session if set.
func (a *Adapter) Run(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	max := a.maxOutput()
	p := &Parser{Now: a.now, Session: req.Session, MaxText: max}
	return modelcli.RunLines(ctx, req, proc.Spec{
		Argv:      a.argv(req.Session),
		Env:       a.env(req.Env),
		KillGrace: a.KillGrace,
		MaxStdout: max,
	}, p)
}
