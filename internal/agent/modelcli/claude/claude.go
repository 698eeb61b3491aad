// Package claude runs Claude Code (the claude CLI) for the watcher: one
// prompt in print mode, its streamed JSON output turned into
// [modelcli.Event] values as they happen and into a [modelcli.Response].
//
// # Command line
//
// [Adapter.Run] executes, without a shell and with the prompt on standard
// input:
//
//	claude -p [--allowedTools RULE…] [--mcp-config CONFIG… --strict-mcp-config]
//	    --output-format stream-json --verbose --permission-mode acceptEdits
//	    [--model MODEL] [--max-turns N] [--append-system-prompt TEXT]
//	    [--resume SESSION] [ARGS…]
//
// The flags, and why:
//
//   - Print mode (-p): one prompt, one answer, then exit; it never waits on
//     a terminal, and reads the prompt from standard input.
//   - Streamed JSON (--output-format stream-json, which print mode wants
//     with --verbose): an object a line as the run goes: system/init with
//     the session id, assistant messages, tool results, and a last result
//     line with the answer, cost, usage and permission denials.
//   - Permission mode acceptEdits (Adapter.PermissionMode): file edits
//     inside the working directory go ahead; anything else that would need
//     someone to approve it is denied, the run goes on, and the denial is
//     reported (see Questions). An unattended agent must never wait for an
//     approval nobody will give, nor run with every check off:
//     bypassPermissions is refused (Claude Code refuses it too, as root).
//     "dontAsk" is stricter: only what the allowed tools allow.
//   - Allowed tools (--allowedTools, Adapter.AllowedTools): rules run
//     without asking, such as "Bash(git diff:*)" or "Bash(collab send:*)",
//     each rule one argument. The flag takes a list, so it comes right
//     after -p and is followed by another option, never by a stray word.
//     [modelcli.Request.AllowTools] join them for that run only (the
//     rules of a denial someone allowed, see Questions).
//   - MCP servers (--mcp-config with --strict-mcp-config,
//     Adapter.MCPConfig and Adapter.MCPServers): these servers only, not
//     the user's. Each of MCPServers is given as one JSON argument,
//     {"mcpServers":{NAME:{"type":"stdio","command":…,"args":[…]}}}, and
//     its tools are allowed ("mcp__NAME" joins the allowed tools), so the
//     model can use them unattended. Claude Code gives a server its own
//     whole environment, Request.Env included.
//   - Resume (--resume): [modelcli.Request.Session], the session id of an
//     earlier [modelcli.Response].
//
// Adapter.Args come last, each exactly one argument. A workflow agent's
// tools: become Args with [ToolArgs]: --allowedTools with the list and
// --disallowedTools with the other [BuiltinTools] (--allowedTools alone
// only adds to what Claude Code may use).
//
// # Environment
//
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1: no auto-updater, telemetry,
// error reporting or other background calls from a process that only
// answers one prompt. It comes before the inherited environment, so an
// operator's own setting wins; Adapter.Env, then Request.Env, come after
// both.
//
// # Events
//
// system/init is [modelcli.EventStarted] (Text: the session id); each text
// block of an assistant message (a subagent's too) is
// [modelcli.EventProgress]; thinking is left out; each tool_use
// block is [modelcli.EventToolCall] (Tool: its name, Text: its command, file
// or pattern); an API retry (system/api_retry) is a progress event whose
// Text begins with "claude" in square brackets; the result line ends the run with
// [modelcli.EventNeedsInput] if tools were denied, then
// [modelcli.EventCompleted] or [modelcli.EventError]. Events carry the time
// their line arrived.
//
// Usage comes from the result line as Claude Code reports it: Input is the
// input tokens not read from or written to the prompt cache. CostUSD is
// total_cost_usd.
//
// # Questions
//
// Claude Code in print mode never stops to ask: a tool call that needs
// approval is denied and the model carries on, usually explaining what it
// could not do. When the result lists permission denials, the response is
// still a success (its Text is the model's answer) and carries a
// [modelcli.Question] naming each denied call ("Bash(git push)",
// "Read(/etc/hostname)") with the options "allow" and "deny". Its Allow
// holds the permission rules that let exactly those calls run, to pass
// as [modelcli.Request.AllowTools] to the run that resumes the session
// once someone allows them:
//
//   - Bash: the exact command, "Bash(git push)".
//   - Read: the file, an absolute path written with a leading "//" as
//     Claude Code's rules want, "Read(//etc/hostname)".
//   - Edit, Write, MultiEdit, NotebookEdit: the file in an Edit rule
//     (the only kind that matches a Write with a path),
//     "Edit(//srv/notes.txt)".
//   - WebFetch: the URL's host, "WebFetch(domain:example.com)".
//   - Any other tool (an MCP tool, WebSearch…): the tool's name.
//
// A Bash, Read, edit or WebFetch call without the argument its rule needs
// gets no rule (the bare name would allow every call of the tool), so
// allowing it grants nothing.
//
// A model that asks the user a question in plain text is not detected:
// that is just its answer.
//
// # Errors
//
// A result with is_error set (an API error after Claude Code's own retries,
// the turn limit: subtype error_max_turns) fails the run with the CLI's
// message; so does a non-zero exit without a result, with the last line of
// standard error. A resume Claude Code refuses ("No conversation found with
// session ID", or an id that is not one) wraps [modelcli.ErrSessionGone].
// A success with an empty result is [modelcli.ErrEmpty]. Response.Stderr
// holds the tail of standard error in every case.
//
// Claude Code retries API errors itself, up to ten times over minutes,
// reporting each retry; CLAUDE_CODE_MAX_RETRIES in Adapter.Env lowers that.
package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// DefaultPermissionMode is the --permission-mode of a zero Adapter.
const DefaultPermissionMode = "acceptEdits"

// Env is what the adapter adds to the environment, before the inherited
// variables so that these win.
var Env = []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}

// ErrBypass is returned for PermissionMode "bypassPermissions".
var ErrBypass = errors.New("claude: permission mode bypassPermissions is refused: an unattended agent keeps its checks")

// Adapter runs Claude Code. The zero value runs "claude" from PATH with
// the defaults described in the package documentation.
type Adapter struct {
	Bin            string   // program; "" is "claude"
	Model          string   // --model; "" is the CLI's default
	Args           []string // appended, each exactly one argument
	PermissionMode string   // --permission-mode; "" is DefaultPermissionMode
	AllowedTools   []string // --allowedTools rules, each one argument
	MaxTurns       int      // --max-turns; 0: the CLI's (no limit)
	SystemPrompt   string   // --append-system-prompt; "": none
	MCPConfig      string   // --mcp-config (a file or JSON) with --strict-mcp-config; "": none
	Env            []string // KEY=VALUE, added after the inherited environment
	// MCPServers are stdio MCP servers given with --mcp-config too, their
	// tools allowed.
	MCPServers []modelcli.MCPServer

	MaxOutput int           // longest stdout line and reply kept; 0: proc.DefaultMaxStdout
	KillGrace time.Duration // SIGTERM to SIGKILL; 0: proc.DefaultKillGrace

	now     func() time.Time // the clock of event times; nil: time.Now
	environ []string         // the inherited environment; nil: os.Environ()
}

// argv returns the command line for a run resuming session ("" for a
// fresh one) with the rules of grant allowed too.
func (a *Adapter) argv(session string, grant []string) ([]string, error) {
	mode := a.PermissionMode
	if mode == "" {
		mode = DefaultPermissionMode
	}
	if mode == "bypassPermissions" {
		return nil, ErrBypass
	}
	bin := a.Bin
	if bin == "" {
		bin = "claude"
	}
	argv := []string{bin, "-p"}
	allowed := append(slices.Clip(a.AllowedTools), grant...)
	var configs []string
	if a.MCPConfig != "" {
		configs = append(configs, a.MCPConfig)
	}
	for _, srv := range a.MCPServers {
		c, err := mcpConfig(srv)
		if err != nil {
			return nil, err
		}
		configs = append(configs, c)
		allowed = append(allowed[:len(allowed):len(allowed)], "mcp__"+srv.Name)
	}
	// The list flags are followed by an option, so none swallows a word.
	if len(allowed) > 0 {
		argv = append(argv, "--allowedTools")
		argv = append(argv, allowed...)
	}
	if len(configs) > 0 {
		argv = append(argv, "--mcp-config")
		argv = append(argv, configs...)
		argv = append(argv, "--strict-mcp-config")
	}
	argv = append(argv, "--output-format", "stream-json", "--verbose", "--permission-mode", mode,
		// A run collab starts takes messages only through collab's own,
		// verified path: not from the person's other Claude sessions.
		"--settings", Isolated)
	if a.Model != "" {
		argv = append(argv, "--model", a.Model)
	}
	if a.MaxTurns > 0 {
		argv = append(argv, "--max-turns", strconv.Itoa(a.MaxTurns))
	}
	if a.SystemPrompt != "" {
		argv = append(argv, "--append-system-prompt", a.SystemPrompt)
	}
	if session != "" {
		argv = append(argv, "--resume", session)
	}
	return append(argv, a.Args...), nil
}

// Isolated is the --settings of every Claude Code run collab starts (a
// watcher's, a live session's, a delegated agent's): it refuses messages
// from the person's other Claude sessions (crossSessionInbound, Claude
// Code 2.1.224 and later; earlier versions have no such path and accept
// the setting), and denies the tools that reach them.
const Isolated = `{"crossSessionInbound":"refuse","permissions":{"deny":["SendMessage","ListAgents"]}}`

// mcpConfig returns the --mcp-config JSON that declares srv.
func mcpConfig(srv modelcli.MCPServer) (string, error) {
	if err := srv.Check(); err != nil {
		return "", fmt.Errorf("claude: %w", err)
	}
	args := srv.Args
	if args == nil {
		args = []string{}
	}
	type server struct {
		Type    string   `json:"type"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	b, err := json.Marshal(map[string]map[string]server{"mcpServers": {srv.Name: {Type: "stdio", Command: srv.Command, Args: args}}})
	if err != nil {
		return "", fmt.Errorf("claude: mcp config: %w", err)
	}
	return string(b), nil
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

// LiveCommand returns the command line and the whole environment of a
// live session (internal/agent/live): Run's, resuming session with the
// rules of grant allowed, plus --input-format stream-json, so that the
// process takes turns as JSON lines on standard input, and
// --permission-prompt-tool stdio, so that what it would ask a person
// comes as a control request on standard output; env is added to the
// environment as Request.Env is.
func (a *Adapter) LiveCommand(session string, grant, env []string) (argv, environ []string, err error) {
	argv, err = a.argv(session, grant)
	if err != nil {
		return nil, nil, err
	}
	argv = slices.Insert(argv, 2, "--input-format", "stream-json", "--permission-prompt-tool", "stdio")
	return argv, a.env(env), nil
}

// MaxText is the longest reply kept: MaxOutput, or proc.DefaultMaxStdout.
func (a *Adapter) MaxText() int { return a.maxOutput() }

// ReportsCost reports whether runs report what they cost: Claude Code's
// do (total_cost_usd).
func (*Adapter) ReportsCost() bool { return true }

// Run runs Claude Code once on req.Prompt, resuming req.Session if set.
func (a *Adapter) Run(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	argv, err := a.argv(req.Session, req.AllowTools)
	if err != nil {
		return modelcli.Response{}, err
	}
	max := a.maxOutput()
	p := &Parser{Now: a.now, Session: req.Session, MaxText: max}
	return modelcli.RunLines(ctx, req, proc.Spec{
		Argv:      argv,
		Env:       a.env(req.Env),
		KillGrace: a.KillGrace,
		MaxStdout: max,
	}, p)
}
