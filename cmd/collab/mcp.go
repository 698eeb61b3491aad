package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/mcpserver"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

func runMCP(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("mcp", mcpUsage, stderr)
	agent := agentFlag(fs, "", "the agent every tool acts as", false)
	ch := needChannel(fs, "the channel")
	poll := fs.Duration("poll", delegate.DefaultPoll, "how often send_and_wait looks for the reply")
	verbose := fs.BoolP("verbose", "v", false, "log every failed tool call to standard error")
	delegateCmd := fs.String("delegate-cmd", "", "delegate_to_worktree: the command line of the delegated agent's CLI (collab delegate --cmd; "+service.EnvDelegateCmd+")")
	fromEnv(fs, "delegate-cmd", service.EnvDelegateCmd)
	keyf := keyFlag(fs)
	ringf := keyringFlag(fs)
	nf := addNATSFlags(fs)
	rootf := rootFlag(fs)
	rf := addRemoteFlags(fs)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	if err := namedAgent("mcp", *agent); err != nil {
		return err
	}
	if *poll <= 0 {
		return usageErrorf("mcp: --poll must be positive")
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	signer, err := signing.LoadAgentKey(*keyf, *agent, getenv)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := mcpserver.Config{Agent: *agent, Channel: *ch, Host: hostname(), Logger: logger, Poll: *poll, Signer: signer,
		// Inside a watcher's model run, what the agent sends is one hop
		// deeper than the message it answers.
		Hops: runenv.RunHops(getenv)}
	cfg.Root, cfg.Verifier = mcpTree(rf, fs.Changed("root"), *rootf, *ringf, *agent, getenv, stderr)
	// Through a bridge everything it writes must be signed (needKey).
	svc, err := openService(ctx, serviceSpec{cmd: "mcp", agent: *agent, root: cfg.Root, rf: rf, nf: nf, keyPath: *keyf, needKey: true,
		verifier: cfg.Verifier, nats: true, logger: logger, connName: *agent + "-mcp"}, getenv, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	cfg.Remote, cfg.Service = svc.Client, svc.Service
	if !svc.remote() {
		def := service.DelegateDefaultsFrom(getenv)
		def.Cmd = *delegateCmd
		cfg.Service = service.WithDelegateDefaults(svc.Service, def)
	}
	return mcpserver.ServeStdio(ctx, cfg, stdin, stdout)
}

// mcpTree is the tree the tools of mcp read and the verifier they judge
// signatures with: on the mount --root and its keyring (verifierFor);
// with --remote this host's own tree (remote.LocalTree), whose keyring
// copy the mirror wrote as this account unless --keyring names another.
func mcpTree(rf *remoteFlags, rootSet bool, rootFlag, ringFlag, agent string, getenv env, stderr io.Writer) (tree.Root, *signing.Verifier) {
	if !rf.on {
		root := tree.Resolve(rootFlag, getenv)
		return root, verifierFor(root, keyring.In(root, ringFlag), stderr)
	}
	root := remote.LocalTree(rf.stateDir(agent, getenv), rootSet, rootFlag)
	if ringFlag == "" {
		return root, signing.NewVerifier(keyring.In(root, ""))
	}
	return root, verifierFor(root, keyring.In(root, ringFlag), stderr)
}

const mcpUsage = `Usage: collab mcp --agent A --channel C

Serve the bus to a model CLI over MCP on standard input and output, as
agent A on channel C. The agent and channel come from these flags (or
COLLAB_AGENT and COLLAB_CHANNEL), never from a tool's arguments, and the
agent never from the login name: the model acts as the agent it is told
to be. Logs go to standard error. What the agent posts is signed when it
has a key (--key, else its default key file); the messages the tools
return carry a "verdict" on their signature.

Tools (arguments in brackets are optional):
  channel_send     message [to]                   post a message as A
  channel_read     [since] [limit]                read; marks them read in A's inbox
  channel_peek     [since] [limit]                read, marking nothing
  inbox_check                                     unread messages for A; marks them read
  inbox_peek                                      the same, marking nothing
  inbox_ack        until                          mark read up to a message id or time
  document_read    [file]                         a shared document, with its version
  document_write   content [file] [if_version]    replace it (refused if changed since)
  document_append  content [file]                 add to its end
  document_list                                   the channel's documents
  document_create  file content                   a new document
  who                                             who is awake, working, stale
  message_status   id                             where a message stands for each addressee
  task_list        [status]                       the task board
  task_claim       [task_id]                      claim a task (or the first ready one)
  task_update      id status …                    checkpoint, complete or fail it
  task_context     id [max_tokens]                what you need to resume a task
  send_and_wait    message to [timeout_seconds]   ask an agent and wait for the reply
  job_list                                        your jobs, and those answering your messages
  job_show         id                             one job, with its newest events
  delegate_to_worktree  prompt [baseBranch] [branch] [agentId] [title]
                                                  start an agent (agentId: its CLI) on a new
                                                  branch in a new worktree (collab delegate)
  get_session_status    sessionId                 its state, jobs, last message, commits
                                                  ahead, uncommitted files
  send_message_to_session  sessionId message      a follow-up to its agent
  list_sessions                                   the sessions A delegated
Documents default to notes.md and stay inside ROOT/docs/C. The repository
delegate_to_worktree works on is the one of this process's working
directory, never an argument; the limits and defaults are collab
delegate's (COLLAB_DELEGATION_DEPTH, COLLAB_DELEGATE_CLI, COLLAB_WORKTREES,
the hops and budgets the watcher passes on); --delegate-cmd is its --cmd.

With --remote (or COLLAB_REMOTE=1), on a host without the shared tree,
every tool goes through a bridge over NATS (--nats; see collab bridge):
posts are signed here and kept in the outbox (--state-dir) until a bridge
takes them (channel_send then says queued), the inbox cursor is this
host's, and send_and_wait follows the stream. --root is then this host's
own tree, by default STATE/tree where watch --remote mirrors: its keyring
verifies (unless --keyring) and its jobs are job_list's. The delegation
tools are not available there. 'collab watch --remote --mcp' gives its
CLI this server by itself.

'collab watch --mcp' gives the watcher's claude or codex CLI this server by
itself. By hand, for Claude Code (--mcp-config FILE):
  {"mcpServers": {"collab": {"command": "collab", "args": ["mcp", "--agent", "claude", "--channel", "dev"]}}}
For Codex (~/.codex/config.toml):
  [mcp_servers.collab]
  command = "collab"
  args = ["mcp", "--agent", "codex", "--channel", "dev"]
  default_tools_approval_mode = "approve"

Flags:
`
