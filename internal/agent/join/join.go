// Package join puts a person's own interactive model CLI session on the
// bus (collab join): the CLI runs in the person's terminal as agent NAME,
// with collab's MCP tools to answer, and a delivery loop that lives and
// dies with it hands the session every message addressed to NAME.
//
// # Delivery
//
// The loop reads NAME's inbox (internal/workspace/inbox, limited to the
// joined channels) every Config.Poll: what is unread there is new to the
// session, including what came while no session was open. Each new
// message is marked seen (a seen file, as a watcher's), queued, and
// handed to the CLI by its mechanism ([CLI]), all that is queued at once
// in one batch ([Batch.Text]). A batch the mechanism took is offered: an
// offered mark for each message (delivery.KindOffered), and the inbox
// acknowledged up to it, so it is not offered again. A batch it could not
// take goes back to the queue.
//
// A message is read when the CLI shows that its model received it: its
// transcript holds the message's marker and, after it, a line of the
// model's (Claude Code, Gemini CLI), or the app-server said the input
// reached the model (Codex). It is answered when a message from NAME in
// reply to it lands in its channel (the session posts it with the MCP
// tool channel_send and in_reply_to): the loop then records the answer
// as a claim finished replied, so collab status says answered. Where a
// mechanism gives no acknowledgement the message stays offered: read is
// never claimed without evidence.
//
// A message's signature is judged by the trust policy (Config.Trust): one
// that does not verify is delivered marked forged, naming the sender it
// claims, never as that sender's.
//
// # Presence
//
// While the session runs the loop writes NAME's heartbeat: AWAKE, substate
// LIVE, with the host and the CLI (presence.Joined); OFFLINE at the end.
package join

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// Config is a joined session's configuration.
type Config struct {
	Root     tree.Root
	Agent    string
	Channels []string // the first is where the MCP tools post
	Host     string   // default os.Hostname()
	Signer   *signing.Signer
	Verifier *signing.Verifier
	Trust    signing.Policy // "": signing.DefaultPolicy

	Poll time.Duration // default 1s
	// NATS, when set, is the connection that wakes the loop at once with
	// what others announce (as a watcher's); the inbox is still read
	// every Poll. Local writes wake it through inotify.
	NATS      *natsbus.Options
	Heartbeat time.Duration // default 10s
	// Dir is a private folder (0700, made by Run) for the delivery socket
	// and the CLI's settings for this run; default DefaultDir.
	Dir string
	// Exe is the collab binary the CLI runs as its hooks and MCP server;
	// default this process's.
	Exe    string
	Getenv func(string) string // for DefaultDir; default os.Getenv
	Logger *slog.Logger
	Now    func() time.Time
}

// Defaults of a zero Config.
const (
	DefaultPoll      = time.Second
	DefaultHeartbeat = 10 * time.Second
)

// setDefaults checks c (a bad setting is an errkind.Invalid error) and
// fills in the defaults.
func (c *Config) setDefaults() error {
	if err := tree.CheckName("agent", c.Agent); err != nil {
		return errkind.Wrap(errkind.Invalid, fmt.Errorf("join: %w", err))
	}
	if len(c.Channels) == 0 {
		return errkind.New(errkind.Invalid, "join: give --channel (or set COLLAB_CHANNEL)")
	}
	for _, ch := range c.Channels {
		if err := tree.CheckName("channel", ch); err != nil {
			return errkind.Wrap(errkind.Invalid, fmt.Errorf("join: %w", err))
		}
	}
	if c.Trust != "" {
		if _, err := signing.ParsePolicy(string(c.Trust)); err != nil {
			return errkind.Wrap(errkind.Invalid, fmt.Errorf("join: --trust: %w", err))
		}
	}
	if err := c.Root.Check(); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Dir == "" {
		d, err := DefaultDir(c.Getenv)
		if err != nil {
			return err
		}
		c.Dir = d
	}
	if c.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		c.Exe = exe
	}
	c.Poll = cmp.Or(c.Poll, DefaultPoll)
	c.Heartbeat = cmp.Or(c.Heartbeat, DefaultHeartbeat)
	c.Trust = cmp.Or(c.Trust, signing.DefaultPolicy)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// DefaultDir is a session's private folder: under $XDG_RUNTIME_DIR, else
// under the user's cache folder (never under /tmp, which Gemini CLI
// refuses to read settings from), named by this process.
func DefaultDir(getenv func(string) string) (string, error) {
	base := getenv("XDG_RUNTIME_DIR")
	if base == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("join: %w", err)
		}
		base = c
	}
	return filepath.Join(base, "collab", "join", strconv.Itoa(os.Getpid())), nil
}
