// Package service owns the operations on a collab tree. Every door onto a
// tree calls it and nothing else: the CLI (cmd/collab), the MCP server
// (stdio and HTTP), the dashboard's JSON API (internal/web) and the bridge
// that serves hosts without the mount (internal/transport/bridge). A door
// parses its input, makes one call, and renders the result; a rule (what
// a name may be, who may stop what, how a post is threaded, signed and
// announced) has its one owner here or below, never in a door.
//
// # The operations
//
// [Service] is every operation, grouped by what it works on:
//
//   - [Messages]: post, read and follow a channel, a message's delivery
//     status, waiting for a reply, the who board, a channel's signature
//     audit and its archive.
//   - [Workspace]: an agent's inbox, a channel's shared documents and task
//     board, the watchers' jobs, the keyring.
//   - [Delegations]: an agent in a git worktree of its own: start, status,
//     send, stop, remove, resume.
//   - [Workflows]: a workflow file's team: run, start, stop one agent or
//     a whole instance, list.
//
// It has two implementations. [Mount] works on the files of a tree this
// host mounts. Package bridged works through a `collab bridge` over NATS,
// for a host without the mount; the operations that need the mount
// (delegation, workflows, jobs, keys, audit, archive) answer
// errkind.Unavailable there. The Mount alone also makes the tree
// ([Mount.Init]) and serves the bridge's requests ([Mount.Relay]).
//
// A door gets its Service once, at its start (package dial opens the
// Mount, with NATS when configured, or a bridge client: cmd/collab from
// --remote; web, MCP and bridge: their Config.Service), and calls it for
// everything after.
//
// # Who acts
//
// Every operation that writes acts as an [Actor]: an agent or a person,
// with the key that signs what it writes, and the depth of the message it
// is answering (so chains of agents asking agents stay bounded, however
// they post). A door decides who the actor is (a flag, the MCP server's
// agent, the signed-in person, the NATS account) and the layer takes its
// word: authentication is the door's, authorisation (may this actor stop
// that job?) is the layer's.
//
// Agents are named as people type them: NAME or NAME@INSTANCE (an agent
// of a workflow instance, whose id on disk is NAME--INSTANCE). The layer
// parses names with one rule (workflow.ParseAddress) and shows instance
// agents as NAME@INSTANCE (workflow.Address).
//
// # Errors
//
// Every error the layer returns carries a kind from package errkind
// (Invalid, NotFound, Conflict, Forbidden, Unavailable, Timeout, Queued;
// Failed when none applies). The doors map kinds once, at their edge:
//
//	kind         collab exit  HTTP  MCP (tool error, _meta)  bridge wire
//	Invalid      2            400   collab/kind "invalid"    invalid
//	NotFound     3            404   "not found"              not-found
//	Timeout      3            504   "timeout"                unavailable (retry)
//	Conflict     4            409   "conflict"               conflict
//	Forbidden    4            403   "forbidden"              forbidden
//	Queued       5            202   result queued: true      (kept, retried)
//	Unavailable  1            503   "unavailable"            unavailable (retry)
//	Failed       1            500   "failed"                 internal
//
// The owners of the mappings: cmd/collab's exitCode, internal/web's
// httpStatus, internal/transport/mcpserver's toolError (every failure is
// a tool error the model reads, as the MCP spec asks for invalid input
// and refusals; arguments that fail a tool's schema are the SDK's
// JSON-RPC -32602), internal/transport/bridge's wireCode (and the remote
// client reads the codes back into kinds).
package service

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Service is every operation on a tree (see the package doc).
type Service interface {
	Messages
	Workspace
	Delegations
	Workflows
}

// Actor is who an operation acts as.
type Actor struct {
	// Name is the agent or person, as the door was told it (NAME or
	// NAME@INSTANCE); the layer validates it.
	Name string
	// Signer signs what the actor writes; nil writes unsigned (refused
	// where a key is required, as on a bridged host).
	Signer *signing.Signer
	// Hops is the depth of the message the actor is answering: a watcher's
	// model run's $COLLAB_HOPS, -1 for none (a person, a script outside a
	// run). What the actor posts is one hop deeper, 0 outside a run.
	Hops int
	// Mode is written in a posted message's metadata.mode ("" for none;
	// channel.ModeMCP for the MCP tools).
	Mode string
}

// Config is what a Mount needs. Root is required.
type Config struct {
	Root tree.Root
	// Host is written in what the layer writes (metadata.host, claims,
	// task events); default os.Hostname.
	Host string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger takes what the layer reports without failing (a message
	// sent as a file only); default discard.
	Logger *slog.Logger
	// Verifier judges the signatures of what the layer returns (nil:
	// every key is unknown).
	Verifier *signing.Verifier
	// Publish, if set, announces a message after its file is written (the
	// NATS fast path). A failure is logged; the file is the truth.
	Publish func(ctx context.Context, m *channel.Message) error
	// Wake, if set, returns the names of message files announced on
	// channel ch and a function to stop; waits read them at once instead
	// of at their next poll.
	Wake func(ctx context.Context, ch string) (<-chan string, func(), error)
	// NoFSWake turns off the fsnotify watch a wait for a reply keeps on
	// its channel's folder (messages_wake.go): for tests in a
	// testing/synctest bubble, where a goroutine reading inotify is never
	// durably blocked and the bubble's clock would stand still.
	NoFSWake bool
	// Program is the collab executable that detached processes run
	// (delegated agents' watchers, `start --background`, resume). Empty,
	// the operations that start one answer Unavailable: a door that
	// offers them sets it (cmd/collab: its own executable), and a test
	// never starts its own binary by mistake.
	Program string
}

// Mount is the Service on the files of a tree this host mounts.
type Mount struct {
	cfg Config
}

var _ Service = (*Mount)(nil)

// NewMount returns the Service on cfg.Root. The door has checked that
// it is a tree (tree.Root.Check), as it reports that error its own way.
func NewMount(cfg Config) *Mount {
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Mount{cfg: cfg}
}

// Root is the tree the Mount works on.
func (m *Mount) Root() tree.Root { return m.cfg.Root }
