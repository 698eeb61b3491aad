// Package workflow reads a workflow file: one YAML file that names a team
// of agents, the setup commands that run before it starts, and the
// kickoff message that sets it to work (issue 14; seed 000's "Workflow
// File Format"). It parses and validates the file, runs its setup steps,
// interpolates ${{ … }} variables, and owns the naming rules of a
// workflow's instances (ids.go). The commands that run a team live in
// cmd/collab.
//
// # The file
//
//	name: code-review          # optional; default: the file's name without .yaml/.yml
//	context:                   # optional; see Context
//	  channel: review          # default: NAME--INSTANCE (a channel per instance)
//	  document: notes.md       # default: notes.md (in ROOT/docs/CHANNEL)
//	agents:                    # required, at least one; kept in file order
//	  reviewer:
//	    model: anthropic/claude-sonnet-4-5   # PROVIDER/NAME: the CLI, and its --model
//	    system_prompt: prompts/reviewer.md
//	    tools: [Read, Grep]    # see Tools
//	    memory: [NOTES.md]
//	    workdir: .
//	    mcp: true
//	  coder:
//	    cli: command           # claude | codex | gemini | command (then cmd:)
//	    cmd: ./my-model
//	setup:                     # optional; run in order before the kickoff
//	  - shell: git diff main
//	    as: diff
//	    timeout: 30s           # default 2m
//	kickoff: |                 # optional: without one, start waits for the first message
//	  ${{ diff }}
//	  @reviewer please review these changes.
//
// Seed 000's files load as they are written: an agent given only model:
// (and system_prompt:), context: false or a provider with its config,
// tools:, no kickoff.
//
// An agent's keys are the `collab watch` settings an agent can have, named
// by the flag in snake_case: cli, cmd, cli_args (list), model,
// session_scope, session_ttl, budget_usd, budget_tokens, max_turns,
// system_prompt (alias: role), memory (list), context (count of recent
// messages), prompt_template, workdir, timeout, post_errors, max_hops,
// rate, pair_rate, trust, mcp, live; and tools (list). A key left out keeps the
// watch default (the commands apply the defaults; Agent holds nil or "").
// There is no env: key, as `collab watch` has no such setting: an agent's
// CLI inherits the environment of the process that runs the team. Watch
// settings of the process rather than of an agent (poll, heartbeat, grace,
// prices, keys, NATS) are not keys either.
//
// A model written PROVIDER/NAME names its CLI ([Providers]: anthropic is
// claude, openai codex, google gemini) and NAME goes to that CLI's
// --model; cli: may say the same CLI again, and cmd: then names the
// program to run instead of the one on PATH. Another provider, or a model
// without one, needs cli: (its name then goes to --model as written); an
// agent with neither model: nor cli: is refused, naming the choices.
//
// # Context
//
// context: false gives the instance no shared context: the agents'
// prompts show no transcript (context: 0 for each; an agent's own count
// is refused) and the instance has no documents (none made or listed,
// ${{ context.document }} refused). The channel stays, as the @mentions
// that wake the agents travel in it. Left out or empty, the context is
// the default: the file provider.
//
// context.provider is file (the tree: ROOT/channels/CHANNEL and
// ROOT/docs/CHANNEL) or memory (a private tree of the running process,
// gone when it ends: see the service's workflows_store.go). Its config
// maps seed 000's folder of context onto the channel and its documents:
// dir names the channel by its last element (${{ instance }},
// ${{ workflow.instance }} and ${{ workflow.name }} replaced), channel by
// its file's name without the extension (discussion.md: discussion), both
// by DIR-STEM; the seed's defaults (.workflow/${{ instance }}/,
// channel.md) leave the default channel. document is the entry file (as
// context.document), and documents are made, empty, in the channel's
// documents folder when the instance starts, if missing. A memory
// provider has no dir. context.channel and config's dir or channel are
// one or the other.
//
// # Tools
//
// tools: lists the tools an agent may use, each one argument of its CLI
// (never starting with '-'). What each CLI can restrict (ToolArgs, added
// after cli_args):
//
//   - claude: --allowedTools with the list (they run without asking) and
//     --disallowedTools with every built-in tool Claude Code has that the
//     list does not name (a rule such as "Bash(git diff:*)" names Bash).
//   - gemini: --allowed-tools with the list; Gemini CLI cannot take a
//     built-in tool away by flag.
//   - codex: nothing; codex exec has no flag that limits its tools.
//   - command: nothing.
//
// Load says what a CLI cannot restrict in File.Warnings, which the
// commands print before the team starts.
//
// Paths in the file (system_prompt, prompt_template, memory, workdir) are
// relative to the workflow file's folder and are made absolute by Load.
// system_prompt is a file when its value is one line without white space
// that contains '/' or '.' (prompts/reviewer.md, role.txt): the file must
// exist and is read by Load. Any other value is the prompt's text. A
// prompt_template file must exist; memory files and the workdir need not
// yet (a setup step may make them).
//
// Anchors, aliases and tags are refused: a workflow is short, and aliases
// make a small file expand without bound.
//
// # Errors
//
// Every problem Load finds is an *Error carrying the file, line and column
// ("review.yaml:12:5: agent \"re viewer\": …"); Load reports all it finds,
// joined with errors.Join, before anything starts. A warning is not an
// error: the file loads, and File.Warnings says what it cannot honour.
//
// # Variables
//
// ${{ NAME }} (spaces inside the braces optional) in the kickoff is replaced
// by Render: a setup step's output (its `as`), env.NAME (an environment
// variable, which must be set), workflow.name, workflow.instance,
// context.channel and context.document. An unknown name is an error, never
// an empty string. Replacement is one pass: a value that itself contains
// ${{ … }} is not expanded again. There is no escape for a literal "${{".
// A setup step's `as` is a letter or '_' then letters, digits, '_' or '-';
// env, workflow and context are reserved.
//
// # Names
//
// The agent named NAME in the instance INSTANCE runs as the agent id
// NAME--INSTANCE (AgentID), which people type and see as NAME@INSTANCE
// (ParseAddress). Workflow, agent and instance names are tree names that
// contain no "--" and neither start nor end with '-' (CheckName), so the id
// splits back at its first "--". Channel(instance) and AgentID may still
// exceed tree.MaxNameLen for long names: the caller checks them once the
// instance is known. Display shows any agent id as people see it.
//
// # Aliases
//
// Inside an instance's channel (its record's channel) an agent of the
// instance is also addressed by its NAME, as the author wrote it
// (@reviewer, to: reviewer, a first line starting with reviewer);
// elsewhere only by its id. The watcher answers to the alias
// (watcher.Config.Aliases), and the readers apply the same rule from the
// records: Aliases(root, channel) maps each alias of the channel to its
// id (package delivery, for collab status, send --wait and the MCP
// message_status), AgentAliases(root, id) gives an agent's channels and
// aliases (package inbox, through inbox.Options.Aliases). When two
// instances share a channel (context.channel), the alias is the one of the
// instance started last. Both read the records only: their cost is bounded
// by the number of records, never a channel's history.
//
// # Instance records
//
// The process that runs an instance keeps its record,
// ROOT/workflows/WORKFLOW--INSTANCE.json (RecordName), replaced atomically
// (WriteRecord; Records and ReadRecord read them, skipping what does not
// parse): a JSON object with name, instance, file (absolute), host, pid,
// started, status (Starting, Running, Done, Failed, Stopped, Timeout),
// agents (ids, in file order), channel, stopped (the agents stopped on
// their own) and, once finished, finished. A
// run's first record (status Starting, before any setup step) is made with
// CreateRecord, which never replaces: of two runs of one instance started
// at once, exactly one creates it.
// RequestStop writes ROOT/workflows/WORKFLOW--INSTANCE.UID.stop
// (StopNameBy, UID the writer's account; free-form JSON for people, only
// its existence and owner matter), from any host; the running process
// polls StopRequested, which honours the stop files of the accounts that
// may stop it (MayStop: the account running it, root, the tree's owner)
// and the shared WORKFLOW--INSTANCE.stop (StopName) of older collabs when
// such an account owns it, removes it, and stops. One agent of it is
// stopped the same way, by ROOT/workflows/WORKFLOW--INSTANCE--NAME.UID.stop
// (AgentStopNameBy, RequestAgentStop, AgentStopRequested): the process
// stops that agent's watcher, lists it in the record's stopped, and runs
// the others on.
// Records are written by the running process for people and for collab
// ls, stop and the readers' aliases: they are not signed, as for those
// they grant nothing (a forged record can only give an alias in a channel
// to an agent id that the channel's messages could name anyway). A record
// of start --background also holds what collab resume runs again (args,
// dir): records and stop files are written with mode 0644 at most,
// whatever the umask, and what runs a record or writes one back first
// checks it (CheckRecord: this account's, a regular file writable by no
// one else, one name).
//
// # API notes
//
// RunSetup takes the steps' environment as a []string (NAME=VALUE, as
// os/exec and proc.Spec do) rather than a lookup function: a shell's
// environment has to be listed.
//
// # Setup steps
//
// Setup steps are commands the workflow's author wrote: each runs with
// `sh -c` in the workflow's folder, in order, with a timeout (default 2
// minutes) after which its whole process group is killed. Its standard
// output (at most 1 MiB, more is an error) becomes the variable named by
// `as`, without one trailing newline. Variables are never interpolated into
// setup commands, and nothing from messages ever reaches a shell: a step
// reads an earlier step's output only through its own means (a file).
package workflow

import (
	"fmt"
	"time"
)

// File is a parsed, validated workflow file.
type File struct {
	Name    string  // the workflow's name: `name:`, or the file's base name without extension
	Path    string  // the file, absolute
	Dir     string  // the file's folder, absolute: setup steps run here, relative paths start here
	Agents  []Agent // in file order
	Setup   []Step  // in file order
	Kickoff string  // raw text, "" when none; Render it with the instance's Vars
	Context Context
	// Warnings are what Load accepted but could not honour in full
	// (what a CLI cannot restrict of tools:), each "file:line:col: …",
	// for the commands to print before the team starts.
	Warnings []string
}

// Context chooses the instance's channel and documents, and where they
// are kept. An empty field takes its default when the instance is known:
// see (*File).Channel and (*File).Document.
type Context struct {
	Off         bool     // context: false: no transcript in prompts, no documents
	Provider    string   // ProviderFile ("" too) or ProviderMemory
	Channel     string   // context.channel: the channel's name
	Dir         string   // context.config.dir, as written (names the channel)
	ChannelFile string   // context.config.channel, as written (names the channel)
	Document    string   // the documents' entry file
	Documents   []string // more documents, made (empty) when the instance starts
}

// Memory reports whether the instance keeps its channel and documents in
// the process (context.provider: memory).
func (c Context) Memory() bool { return c.Provider == ProviderMemory }

// Agent is one agent of a workflow. A nil pointer or empty string means
// the `collab watch` default.
type Agent struct {
	Name string // as the author wrote it: the address inside the channel
	Pos  Pos    // where the agent's key is

	CLI            string   // claude, codex, gemini or command; "" is the watch default (command)
	Cmd            string   // command line of the CLI (required for cli: command)
	CLIArgs        []string // extra arguments, each exactly one
	Model          string
	SessionScope   string // channel, thread or none
	SessionTTL     *time.Duration
	BudgetUSD      *float64
	BudgetTokens   *int64
	MaxTurns       *int
	SystemPrompt   string   // the text (read from the file when the value named one)
	Memory         []string // absolute paths
	Context        *int     // recent messages in the prompt
	PromptTemplate string   // absolute path
	Workdir        string   // absolute path
	Timeout        *time.Duration
	PostErrors     *bool
	MaxHops        *int
	Rate           *int
	PairRate       *int
	Trust          string // any, known or signed
	MCP            *bool
	// Live keeps one warm CLI process per conversation (collab watch
	// --live; the CLIs of watchconf.LiveCLIs).
	Live *bool
	// Tools are the tools the agent may use (tools:), as written;
	// ToolArgs the CLI's arguments that restrict it to them (see
	// "Tools" in the package doc), added before CLIArgs.
	Tools    []string
	ToolArgs []string
}

// Step is one setup command.
type Step struct {
	Shell   string
	As      string        // variable that receives its output; "" discards it
	Timeout time.Duration // DefaultStepTimeout when the file gives none
	Pos     Pos           // where the step is
}

// DefaultStepTimeout bounds a setup step that sets no timeout.
const DefaultStepTimeout = 2 * time.Minute

// Pos is a place in a workflow file; Line and Col count from 1.
type Pos struct {
	File      string
	Line, Col int
}

// String is "file:line:col".
func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// Error is a problem at a place in a workflow file.
type Error struct {
	Pos Pos
	Msg string
	Err error // the cause, if any
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

func (e *Error) Unwrap() error { return e.Err }
