// Package codex runs the Codex CLI (codex exec) for the watcher: one
// prompt, its JSON-lines output turned into [modelcli.Event] values as
// they happen and into a [modelcli.Response].
//
// # Command line
//
// [Adapter.Run] executes, without a shell and with the prompt on standard
// input:
//
//	codex exec --json --skip-git-repo-check --sandbox workspace-write
//	    -c analytics.enabled=false --disable plugins [--model MODEL]
//	    [-c mcp_servers.NAME.KEY=VALUE…] [ARGS…] [resume THREAD_ID] -
//
// The flags, and why:
//
//   - JSON lines (--json): thread.started with the thread id, item.started
//     and item.completed for messages, commands, file changes and tool
//     calls, then turn.completed with the usage, or turn.failed.
//   - Outside Git (--skip-git-repo-check): the watcher's working directory
//     need not be a repository.
//   - Sandbox (--sandbox, Adapter.Sandbox, default workspace-write): the
//     model's commands may write in the working directory (and /tmp), not
//     elsewhere, and reach no network. codex exec never asks for approval:
//     a command the sandbox refuses fails, and the model sees that.
//     "read-only" is stricter; "danger-full-access" is for machines that
//     are a sandbox already.
//   - No background calls (-c analytics.enabled=false, --disable plugins):
//     without them Codex calls ab.chatgpt.com, chatgpt.com and GitHub.
//   - MCP servers (Adapter.MCPServers): each is declared with -c
//     mcp_servers.NAME.command, .args and .env_vars (TOML values, each
//     -c one argument) and default_tools_approval_mode "approve", so its
//     tools run without asking (codex exec cannot ask; without it every
//     call fails with "requires approval"). Codex gives a server only a
//     few basic variables (HOME, PATH, …) of its environment, plus those
//     named in env_vars. It offers the model the server's tools in
//     namespace mcp__NAME, for the models it knows behind its tool_search
//     (the model searches, then calls).
//   - Resume (resume THREAD_ID, after every option): [modelcli.Request.Session],
//     the thread id of an earlier [modelcli.Response]. It must be a UUID:
//     Codex would take anything else for a thread name and, finding none,
//     quietly start a new thread; such a session is refused with
//     [modelcli.ErrSessionGone] without running anything.
//   - The prompt ("-"): read from standard input, so that no prompt is
//     ever an argument. Standard input is the prompt or /dev/null, never
//     an open pipe (Codex would wait for it).
//
// Adapter.Args come before "resume", each exactly one argument: they must
// be options of codex exec itself (-c key=value is the usual one). A
// workflow agent's tools: cannot be applied: codex exec has no flag that
// limits its tools by name ([ToolLimits]).
//
// # Environment
//
// Nothing is added unless Adapter.Env says so: Codex has no variables for
// its background calls, and the flags above turn them off.
//
// # Events
//
// thread.started is [modelcli.EventStarted] (Text: the thread id); an
// agent_message item is [modelcli.EventProgress]; a command_execution,
// file_change, mcp_tool_call or web_search item (or any other *_call item)
// is [modelcli.EventToolCall] when it starts, with Tool the item type (for
// MCP "mcp__SERVER__TOOL") and Text the command, paths or query; Codex's
// own notices (error items, "Reconnecting…" lines) are progress events
// whose Text begins with "codex" in square brackets; reasoning is left
// out. The run ends with
// [modelcli.EventCompleted] or [modelcli.EventError]. Events carry the time
// their line arrived.
//
// The reply is the last agent message. Codex reports no cost: CostUSD is 0
// (the watcher prices the tokens, see internal/agent/pricing). Usage:
// Input is input tokens less cached ones, CacheRead the cached ones,
// Output includes reasoning tokens; Model is Adapter.Model, else the
// top-level model of $CODEX_HOME/config.toml (default ~/.codex), since
// Codex does not say which model it ran.
//
// # Limits
//
// A resumed thread's turn.completed counts the tokens of the whole
// thread, not of this run. The Adapter remembers each thread's count and
// reports the difference; for a thread it has not seen (another process,
// a restart) Usage is the thread's total so far.
//
// Codex exec never stops to ask, so Response.Question is never set; a
// model that asks the user in plain text is just answering.
//
// # Errors
//
// turn.failed fails the run with its message (the API's own message when
// it is an API error body); a non-zero exit without one fails it with
// Codex's "Error: …" line from standard error, or the last line. A resume
// of a thread Codex cannot find ("no rollout found for thread id") wraps
// [modelcli.ErrSessionGone]. A turn with no agent message is
// [modelcli.ErrEmpty]. Response.Stderr holds the tail of standard error.
package codex

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// DefaultSandbox is the --sandbox of a zero Adapter.
const DefaultSandbox = "workspace-write"

// Adapter runs the Codex CLI. The zero value runs "codex" from PATH with
// the defaults described in the package documentation. An Adapter is safe
// for concurrent use; it must not be copied after first use.
type Adapter struct {
	Bin     string   // program; "" is "codex"
	Model   string   // --model; "" is the CLI's default
	Args    []string // options of codex exec, each exactly one argument
	Sandbox string   // --sandbox; "" is DefaultSandbox
	Env     []string // KEY=VALUE, added after the inherited environment
	// MCPServers are stdio MCP servers declared with -c, their tools
	// approved.
	MCPServers []modelcli.MCPServer

	MaxOutput int           // longest stdout line and reply kept; 0: proc.DefaultMaxStdout
	KillGrace time.Duration // SIGTERM to SIGKILL; 0: proc.DefaultKillGrace

	now     func() time.Time // the clock of event times; nil: time.Now
	environ []string         // the inherited environment; nil: os.Environ()

	mu     sync.Mutex
	totals map[string]modelcli.Usage // thread id: its token count so far
}

// maxThreads bounds the threads whose token counts an Adapter remembers.
const maxThreads = 4096

// threadID is the form of the thread ids Codex makes (UUIDs).
var threadID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// argv returns the command line for a run resuming thread ("" for a
// fresh one).
func (a *Adapter) argv(thread string) ([]string, error) {
	bin := a.Bin
	if bin == "" {
		bin = "codex"
	}
	sandbox := a.Sandbox
	if sandbox == "" {
		sandbox = DefaultSandbox
	}
	argv := []string{bin, "exec", "--json", "--skip-git-repo-check", "--sandbox", sandbox,
		"-c", "analytics.enabled=false", "--disable", "plugins"}
	if a.Model != "" {
		argv = append(argv, "--model", a.Model)
	}
	mcp, err := a.mcpArgs()
	if err != nil {
		return nil, err
	}
	argv = append(argv, mcp...)
	argv = append(argv, a.Args...)
	if thread != "" {
		argv = append(argv, "resume", thread)
	}
	return append(argv, "-"), nil
}

// mcpArgs declares Adapter.MCPServers, their tools approved.
func (a *Adapter) mcpArgs() ([]string, error) { return MCPArgs(a.MCPServers) }

// MCPArgs are the -c options that declare servers to Codex (codex exec,
// codex app-server), their tools approved: they run without asking.
func MCPArgs(servers []modelcli.MCPServer) ([]string, error) {
	var argv []string
	for _, srv := range servers {
		if err := srv.Check(); err != nil {
			return nil, fmt.Errorf("codex: %w", err)
		}
		key := "mcp_servers." + srv.Name + "."
		argv = append(argv,
			"-c", key+"command="+tomlString(srv.Command),
			"-c", key+"args="+tomlArray(srv.Args))
		if len(srv.EnvVars) > 0 {
			argv = append(argv, "-c", key+"env_vars="+tomlArray(srv.EnvVars))
		}
		argv = append(argv, "-c", key+`default_tools_approval_mode="approve"`)
	}
	return argv, nil
}

// tomlString returns s as a TOML basic string: quoted, with quotes,
// backslashes and control characters escaped.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r) // invalid UTF-8 becomes U+FFFD
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlArray returns a TOML array of basic strings.
func tomlArray(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// env returns the child's whole environment.
func (a *Adapter) env(req []string) []string {
	return modelcli.Environ(nil, a.environ, a.Env, req)
}

func (a *Adapter) maxOutput() int {
	if a.MaxOutput > 0 {
		return a.MaxOutput
	}
	return proc.DefaultMaxStdout
}

// ReportsCost reports whether runs report what they cost: Codex's do
// not (CostUSD is 0).
func (*Adapter) ReportsCost() bool { return false }

// ReportsTokens reports whether runs report the tokens they used: Codex's
// do (Response.Usage).
func (*Adapter) ReportsTokens() bool { return true }

// Run runs Codex once on req.Prompt, resuming the thread req.Session if
// set.
func (a *Adapter) Run(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	if req.Session != "" && !threadID.MatchString(req.Session) {
		return modelcli.Response{}, fmt.Errorf("codex: resume %q: not a thread id: %w", req.Session, modelcli.ErrSessionGone)
	}
	argv, err := a.argv(req.Session)
	if err != nil {
		return modelcli.Response{}, err
	}
	max := a.maxOutput()
	p := &Parser{Now: a.now, Session: req.Session, MaxText: max, Model: a.model(req.Env)}
	resp, err := modelcli.RunLines(ctx, req, proc.Spec{
		Argv:      argv,
		Env:       a.env(req.Env),
		KillGrace: a.KillGrace,
		MaxStdout: max,
	}, p)
	if p.Turns() > 0 {
		resp.Usage = a.runUsage(req.Session, resp.Session, resp.Usage)
	}
	return resp, err
}

// runUsage turns the token count of thread after a run into the run's own:
// for a resumed thread whose earlier count the Adapter knows, the
// difference.
func (a *Adapter) runUsage(resumed, thread string, total modelcli.Usage) modelcli.Usage {
	if thread == "" {
		return total
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	prev, known := a.totals[resumed]
	if a.totals == nil || len(a.totals) >= maxThreads {
		a.totals = make(map[string]modelcli.Usage)
	}
	a.totals[thread] = total
	if resumed == "" || resumed != thread || !known {
		return total
	}
	sub := func(x, y int64) int64 { return max(x-y, 0) }
	return modelcli.Usage{
		Input:      sub(total.Input, prev.Input),
		Output:     sub(total.Output, prev.Output),
		CacheRead:  sub(total.CacheRead, prev.CacheRead),
		CacheWrite: sub(total.CacheWrite, prev.CacheWrite),
		Model:      total.Model,
	}
}
