// Package mcpserver serves the collab bus to a model over the Model Context
// Protocol, with the official Go SDK: a model CLI (Claude Code, Codex, …)
// starts `collab mcp --agent A --channel C` as a stdio MCP server and can
// then talk on the channel, see who is awake, work the task board and
// delegate, mid-task.
//
// # Identity
//
// Every tool acts as [Config.Agent] on [Config.Channel]. No tool takes an
// agent or a channel as an argument: the model cannot speak for another
// agent or reach another channel, whatever its prompt says.
//
// # Tools
//
// Argument names follow the neighbouring system this was absorbed from
// (seed 000): channel_send takes message (and to); channel_read and
// channel_peek take since and limit; inbox_check and inbox_peek take
// nothing, inbox_ack takes until; document_read, document_write,
// document_append and document_create take file and content (file
// defaults to notes.md, the entry point), document_write also if_version;
// document_list; who; task_list, task_claim, task_update; send_and_wait
// takes message, to and timeout_seconds; job_list takes nothing and lists
// the jobs on the channel of the agent and of the agents it asked (jobs
// answering its messages); job_show takes id (a job's, or its message's).
//
// The delegation tools take seed 001's names and camelCase arguments:
// delegate_to_worktree (prompt, baseBranch, branch, agentId: the CLI,
// title) adds a git worktree of the repository of the server's working
// directory ([Config.Workdir]; never an argument) and starts an agent in
// it through the server's service (service.Delegations: the same limits
// and refusals as collab delegate, on every server with the mount), as
// the agent; get_session_status and
// send_message_to_session take sessionId, list_sessions nothing. They see
// only the sessions the agent delegated, and send_message_to_session
// posts on the session's channel, signed as channel_send. Results are
// structured JSON (also sent as text).
//
// # Errors
//
// The tools call the service layer (internal/service) and map the kind
// of its error once, in [addTool]: arguments the layer finds invalid
// (errkind.Invalid: an empty message, a bad name, a malformed id) are a
// JSON-RPC invalid params error (-32602) with the layer's text; any other
// failure is a tool error the model can read: a document path that
// leaves the folder, a version conflict (naming the current version), a
// message no channel of the session holds.
//
// # Reading and the inbox
//
// The inbox ([collab/internal/workspace/inbox.Inbox]) covers the server's
// one channel. channel_read acknowledges, in the inbox, every message up
// to the newest one it returned, as seed 000 does (even older ones that
// limit left out); channel_peek and inbox_peek acknowledge nothing;
// inbox_check acknowledges what it shows.
//
// # Without the tree
//
// With [Config.Remote] set (`collab mcp --remote`, and the tools `collab
// watch --remote --mcp` gives its CLI), the same tools, with the same
// arguments, results and refusals, read and write through a bridge over
// NATS (packages remote and bridge), never in a tree:
//
//   - channel_send signs the message here with the agent's key and
//     queues it in the host's outbox before sending (post op); when no
//     bridge answers it returns queued: true and the message goes out with
//     the next post or `collab outbox flush`, never dropped.
//   - channel_read and channel_peek are one read op each, with "since"
//     (the bridge reads the newest limit after it on the mount, as here).
//   - inbox_check, inbox_peek and inbox_ack keep the agent's cursor on
//     this host (STATE/inbox, package remote) over the read op; workflow
//     aliases, which live in the tree, are not read.
//   - document_* are the doc op; task_* the task op, the agent's own
//     events signed here (the bridge verifies, never signs).
//   - who and message_status are the bridge's who and status ops.
//   - send_and_wait posts, then follows the channel on the CHAT stream
//     from just before the post (the bridge publishes every file that
//     lands, a foreign writer's too), so a reply from a host whose clock
//     is behind is found; a queued post returns queued: true at once.
//   - job_list and job_show read [Config.Root] as here: the remote host's
//     local tree, where `collab watch --remote` keeps its jobs (the
//     agent's own; other agents' jobs are on the mount).
//   - the delegation tools answer that delegation is not available: it
//     makes worktrees and starts watchers on a host with the tree.
//
// # Adding tools
//
// A group of tools is one file with one function that registers them,
// listed in [toolsets]; it may return an error, which fails [New]. Inside
// it, [addTool] takes a typed input struct (its json and jsonschema tags
// are the arguments) and a handler.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/remote"
)

// Log attribute keys (the same keys as the watcher's and natsbus's).
const (
	keyMsg  = "msg_id"
	keyErr  = "err"
	keyTool = "tool"
)

// Version is reported to clients as the server's version.
const Version = "1"

// DefaultWaitTimeout bounds send_and_wait when the call gives no timeout;
// MaxWaitTimeout bounds it whatever the call says.
const (
	DefaultWaitTimeout = 5 * time.Minute
	MaxWaitTimeout     = 30 * time.Minute
)

// Config is what a Server needs. Root, Agent and Channel are required.
type Config struct {
	Root    tree.Root
	Agent   string // every tool acts as this agent
	Channel string // on this channel
	Host    string // written in messages' metadata.host
	// Hops is the depth of the message the agent is answering (COLLAB_HOPS
	// inside a watcher's run), or -1 if none: messages sent are one deeper,
	// so delegation chains stay bounded by the watchers' --max-hops.
	Hops int

	Logger *slog.Logger     // default: discard
	Now    func() time.Time // default time.Now

	// Poll is how often send_and_wait looks for the reply; default 1 s.
	Poll time.Duration
	// Publish, if set, announces a message after its file is written
	// (NATS dual-write). A failure is logged; the file is the truth.
	Publish func(ctx context.Context, m *channel.Message) error
	// Wake, if set, returns names of message files announced on the
	// channel (NATS) and a function to stop; send_and_wait reads them at
	// once instead of waiting for its next poll.
	Wake func(ctx context.Context) (<-chan string, func(), error)
	// NoFSWake is service.Config's: for tests in a synctest bubble.
	NoFSWake bool

	// Signer, if set, signs every message the agent posts (its agent must
	// be Agent). Verifier checks the signatures of the messages the tools
	// return (nil: every signature's key is unknown).
	Signer   *signing.Signer
	Verifier *signing.Verifier

	// Workdir is the folder whose git repository delegate_to_worktree
	// works on (default: the process's working directory), never a tool
	// argument.
	Workdir string

	// Remote, if set, is a bridge client of a host without the tree
	// (`collab mcp --remote`): the tools read and write through it, not
	// in Root (see "Without the tree" above). Root is then the remote
	// host's local tree (the mirror of `collab watch --remote`, where its
	// jobs are), possibly missing. Its agent must be Agent.
	Remote *remote.Client

	// Service, if set, is the tree's operations the tools call; default
	// a service.Mount on Root, or through Remote when that is set.
	Service service.Service
}

// Server is an MCP server for one agent on one channel.
type Server struct {
	cfg Config
	svc service.Service // every operation on the tree
	mcp *mcp.Server

	// afterRead runs after channel_read returns messages, with the last
	// one (channel_peek does not run it). The inbox tools hook in here to
	// acknowledge what was read.
	afterRead []func(ctx context.Context, last channel.Message) error
}

// toolsets registers every group of tools, in order.
var toolsets = []func(*Server) error{
	addChannelTools,  // channel_send, channel_read, channel_peek
	addWhoTool,       // who
	addStatusTool,    // message_status
	addTaskTools,     // task_list, task_claim, task_update
	addDelegateTools, // send_and_wait
	addInboxTools,    // inbox_check, inbox_peek, inbox_ack; channel_read acknowledges
	addDocumentTools, // document_read, document_write, document_append, document_list, document_create
	addJobTools,      // job_list, job_show
	// delegate_to_worktree, get_session_status, send_message_to_session, list_sessions
	addDelegateWorktreeTools,
}

// New returns a server with every tool registered.
func New(cfg Config) (*Server, error) {
	if err := tree.CheckName("agent", cfg.Agent); err != nil {
		return nil, fmt.Errorf("mcp server: %w", err)
	}
	if err := tree.CheckName("channel", cfg.Channel); err != nil {
		return nil, fmt.Errorf("mcp server: %w", err)
	}
	if cfg.Signer != nil && cfg.Signer.Agent() != cfg.Agent {
		return nil, fmt.Errorf("mcp server: the key is %s's, not %s's", cfg.Signer.Agent(), cfg.Agent)
	}
	if cfg.Remote != nil && cfg.Remote.Agent() != cfg.Agent {
		return nil, fmt.Errorf("mcp server: the bridge client is %s's, not %s's", cfg.Remote.Agent(), cfg.Agent)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, svc: cfg.Service}
	if s.svc == nil {
		s.svc = defaultService(cfg)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "collab", Title: "collab bus for " + cfg.Agent, Version: Version},
		&mcp.ServerOptions{
			Instructions: fmt.Sprintf("You are agent %q on collab channel %q. Use inbox_check for the messages waiting for you, "+
				"channel_read to catch up, channel_send to talk (mention @agent to address someone), "+
				"document_read/document_write/document_append for the shared notes (notes.md first), "+
				"task_list/task_claim/task_update for the task board, "+
				"send_and_wait to hand work to another agent and wait for its answer, "+
				"and delegate_to_worktree to start a new agent on its own branch in a new git worktree "+
				"(follow it with get_session_status, send_message_to_session, list_sessions).", cfg.Agent, cfg.Channel),
			Logger: cfg.Logger,
		})
	for _, add := range toolsets {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("mcp server: %w", err)
		}
	}
	return s, nil
}

// MCP returns the underlying SDK server.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client over t (mcp.StdioTransport in production) until
// the client goes away or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	err := s.mcp.Run(ctx, t)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// addTool registers a tool whose arguments are In (json tags name them,
// jsonschema tags describe them) and whose result is Out. An error from h
// is a tool error the model sees (toolError).
func addTool[In, Out any](s *Server, name, description string, h func(ctx context.Context, in In) (Out, error)) {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: name, Description: description},
		func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			out, err := h(ctx, in)
			if err != nil {
				s.cfg.Logger.Info("tool failed", keyTool, name, keyErr, err)
				return toolError(err), out, nil
			}
			return nil, out, nil
		})
}

// KindKey is the key of a failed tool result's _meta that holds the
// layer's kind of the failure (errkind: "invalid", "not found",
// "conflict", …), for clients that act on it; the model reads the text.
const KindKey = "collab/kind"

// toolError is the answer of a tool that failed: a tool error (isError,
// the text for the model, as the MCP spec asks for invalid input data
// and refusals alike: the model reads it and tries again), with the
// failure's kind in _meta (KindKey). Arguments that do not match a
// tool's schema never reach it: the SDK answers them with a JSON-RPC
// invalid-params error.
func toolError(err error) *mcp.CallToolResult {
	res := &mcp.CallToolResult{}
	res.SetError(err)
	res.Meta = mcp.Meta{KindKey: errkind.Of(err).String()}
	return res
}
