// Package live keeps model CLIs warm: a live session is one CLI process
// for one conversation (a watcher's session key: a channel, or a channel
// and a thread) that takes each message as a new turn through the CLI's
// own protocol, instead of a process started per message.
//
// # Sessions
//
// A [Starter] starts a [Session]: one process, started with [Options]
// (the CLI session to resume, the environment, the working directory,
// the permission rules granted). [Session.Turn] hands it one prompt and
// returns when the CLI ends that turn, with the same [modelcli.Response]
// and events a run of the per-message adapter has. One turn runs at a
// time. [Claude] is Claude Code's Starter, [Codex] the Codex CLI's
// (codex app-server), [Gemini] Gemini CLI's (over ACP).
//
// A turn whose context ends (a kill, the watcher's --timeout, a
// shutdown) is interrupted through the protocol; if the CLI does not end
// the turn within the session's grace, its process group is ended; a
// context ended with the cause proc.ErrKill (the watcher told to hurry)
// ends the process group at once. A process that dies mid-turn fails the
// turn with an error wrapping [ErrDied].
//
// # The pool
//
// A [Pool] holds a watcher's sessions by key. [Pool.Turn] takes the key's
// warm session, or starts one resuming the conversation's CLI session (the
// request's, or the one the dead process had), and runs the turn. When the
// process dies mid-turn, the pool starts another resuming the session and
// redoes the turn once: the caller still answers its message once. A turn
// granted permission rules (modelcli.Request.AllowTools) runs in a process
// of its own started with them, stopped after the turn, so the grant holds
// for that turn only.
//
// A session unused for Config.Idle is stopped; when Config.Max sessions
// are open, starting another stops the least recently used idle one. A
// stopped session costs nothing: the next turn of its key starts a process
// that resumes it. One goroutine owns the pool's state.
//
// # Caveats
//
// A process keeps the environment it was started with: the per-message
// variables (docs/protocol.md#the-model-run: COLLAB_MESSAGE_ID, COLLAB_FROM) are those of the
// message that started it, for what the model runs itself (collab send,
// the MCP server); the watcher's own reply carries the right ones. The
// variables that must be right (Config.Sticky: the watcher's COLLAB_HOPS,
// which bounds chains between agents) start a new process, resuming the
// session, when a turn's differ. A process whose watcher dies reads the end of its standard
// input and exits (and on Linux gets SIGKILL with its parent).
package live

import (
	"context"
	"errors"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

// ErrDied is wrapped by the error of a turn whose process exited before
// the turn ended.
var ErrDied = errors.New("live: the CLI process died mid-turn")

// ErrClosed is returned by a pool or session used after Close.
var ErrClosed = errors.New("live: closed")

// Options are what a process is started with.
type Options struct {
	Resume     string   // the CLI session to resume; "" for a new one
	Env        []string // added to the inherited environment
	Dir        string   // working directory; "" is the caller's
	AllowTools []string // permission rules granted to this process
}

// Starter starts live sessions of one CLI.
type Starter interface {
	Start(ctx context.Context, opts Options) (Session, error)
}

// Session is one warm CLI process.
type Session interface {
	// Turn runs one turn: req.Prompt in, the CLI's answer out. Of req it
	// uses Prompt, Timeout, OnEvent and OnStart (called with the pid); the
	// rest was fixed at Start. The response's CostUSD is this turn's.
	Turn(ctx context.Context, req modelcli.Request) (modelcli.Response, error)
	// Interrupt asks the CLI to stop the running turn, through its
	// protocol; if the turn has not ended when ctx does, the process
	// group is ended. Without a running turn it does nothing.
	Interrupt(ctx context.Context) error
	// Close stops the process (end of input, then its process group) and
	// waits for it.
	Close() error
	// PID is the process's id, which is also its process group's.
	PID() int
	// SessionID is the CLI's session id, once the CLI has said it.
	SessionID() string
	// Done is closed once the process has exited.
	Done() <-chan struct{}
}
