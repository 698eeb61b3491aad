// Package tree is the layout of collab's shared tree (docs/protocol.md#the-shared-tree) and the rule
// for the names that may appear in it.
//
// One root is shared by every host, normally over NFS:
//
//	ROOT/channels/CHANNEL/             a channel:
//	         msg-*.json                   its messages
//	         archive/YYYY-MM/             archived messages, by month
//	ROOT/signals/presence/AGENT.json   presence heartbeats
//	ROOT/registry/agents/AGENT.json    known agents (optional)
//	ROOT/logs/AGENT.log                watcher logs
//	ROOT/state/AGENT/                  a watcher's own state:
//	           watch.json, sessions.json  its cursors and CLI sessions
//	           outbox/                    replies not yet posted
//	           jobs/                      its model runs
//	           inbox/CHANNEL.json         its read cursors
//	ROOT/claims/CHANNEL/AGENT/         an agent's claims on a channel
//	ROOT/docs/CHANNEL/                 shared documents
//	ROOT/tasks/CHANNEL/                the task board of a channel
//	ROOT/scripts/                      seed-compatible entry points
//	ROOT/delegations/ID.json           delegated sessions (package sessions)
//
// A channel or agent name is 1-64 characters of [A-Za-z0-9_-] that does not
// start with '-'. Every name that comes from outside is checked with
// [CheckName] before it is joined to a path, so no name can climb out of the
// root or address a dot-file.
//
// # Symbolic links
//
// The root and the folders above it may be symbolic links (a mount point
// reached through one); [Resolve] resolves them once ([Canonical]). Below
// the root collab follows no link: every folder is opened or made with
// safedir, which refuses a link in any component of its path, so a folder
// of the tree replaced by a link cannot take reads or writes out of it.
package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultRoot is the root used when neither --root nor COLLAB_ROOT is set.
const DefaultRoot = "/mnt/shared/collab"

// ArchiveDir is the name of the folder inside a channel that holds its
// archived messages; it is not a message and no reader lists it as one.
const ArchiveDir = "archive"

// ArchiveMonthLayout is the time layout of the month folders inside a
// channel's archive folder (YYYY-MM).
const ArchiveMonthLayout = "2006-01"

// MaxNameLen is the longest channel or agent name.
const MaxNameLen = 64

// ErrBadName is wrapped by every error [CheckName] returns.
var ErrBadName = errors.New("tree: invalid name")

// CheckName reports whether s is a valid channel or agent name. kind names
// what s is ("channel", "agent") in the error.
func CheckName(kind, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s name is empty", ErrBadName, kind)
	case len(s) > MaxNameLen:
		return fmt.Errorf("%w: %s name %.20q… is longer than %d characters", ErrBadName, kind, s, MaxNameLen)
	case s[0] == '-':
		return fmt.Errorf("%w: %s name %q starts with '-'", ErrBadName, kind, s)
	}
	for i := 0; i < len(s); i++ {
		if !NameByte(s[i]) {
			return fmt.Errorf("%w: %s name %q has %s at byte %d; use only letters, digits, '_' and '-'", ErrBadName, kind, s, CharAt(s, i), i)
		}
	}
	return nil
}

// CharAt names the character that starts at byte i of s, for an error:
// quoted with its code point, or the byte in hex where s is not valid
// UTF-8.
func CharAt(s string, i int) string {
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("byte 0x%02X (not UTF-8)", s[i])
	}
	return fmt.Sprintf("%q (U+%04X)", r, r)
}

// Printable returns s safe to print on a terminal: every control
// character (C0, DEL and C1) and every byte that is not UTF-8 is shown as
// \xNN. Every name collab prints that comes from the tree (a file, an
// agent, a channel, a skip report) goes through it: a file name must not
// drive the terminal.
func Printable(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// ValidName reports whether s is a valid channel or agent name.
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameLen || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !NameByte(s[i]) {
			return false
		}
	}
	return true
}

// NameByte reports whether c may appear in a channel or agent name.
func NameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// Root is the path of a shared tree. Its methods join already-checked names;
// callers check names from outside with [CheckName] first.
type Root string

// Resolve picks the root: flag, then $COLLAB_ROOT (from getenv), then
// [DefaultRoot], and makes it [Canonical]. If that fails (a folder on the
// way cannot be searched), the path is returned cleaned but as given, and
// opening the tree reports the error.
func Resolve(flag string, getenv func(string) string) Root {
	p := string(DefaultRoot)
	if flag != "" {
		p = flag
	} else if v := getenv("COLLAB_ROOT"); v != "" {
		p = v
	}
	r, err := Canonical(p)
	if err != nil {
		return Root(filepath.Clean(p))
	}
	return r
}

// Canonical returns path as an absolute path with no symbolic link in it:
// the root and the folders above it may be links (/mnt/shared/collab to an
// NFS mount, say), resolved here once, because collab then opens every
// folder below the root refusing a link in any component (safedir). A root
// that does not exist yet is resolved through its deepest existing
// ancestor.
func Canonical(path string) (Root, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rest := ""
	for p := abs; ; {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return Root(filepath.Join(r, rest)), nil
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) || parent == p {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

func (r Root) join(elem ...string) string {
	return filepath.Join(append([]string{string(r)}, elem...)...)
}

// Channels is the folder that holds every channel.
func (r Root) Channels() string { return r.join("channels") }

// Channel is the folder of one channel's messages.
func (r Root) Channel(name string) string { return r.join("channels", name) }

// Presence is the folder of presence heartbeats.
func (r Root) Presence() string { return r.join("signals", "presence") }

// PresenceLink is ROOT/presence, where the original project's scripts
// look for heartbeats: a relative link to signals/presence ('collab
// init' makes it).
func (r Root) PresenceLink() string { return r.join("presence") }

// PresenceLinkTarget is what PresenceLink points at, relative to ROOT.
const PresenceLinkTarget = "signals/presence"

// Registry is the folder of registered agents.
func (r Root) Registry() string { return r.join("registry", "agents") }

// Logs is the folder of watcher logs.
func (r Root) Logs() string { return r.join("logs") }

// States is the folder that holds every agent's state folder.
func (r Root) States() string { return r.join("state") }

// State is an agent's private state folder.
func (r Root) State(agent string) string { return r.join("state", agent) }

// Outbox is the folder of an agent's replies that are not yet posted.
func (r Root) Outbox(agent string) string { return r.join("state", agent, "outbox") }

// Jobs is the folder of an agent's job records.
func (r Root) Jobs(agent string) string { return r.join("state", agent, "jobs") }

// Inbox is the folder of an agent's read cursors, one file per channel.
func (r Root) Inbox(agent string) string { return r.join("state", agent, "inbox") }

// Claims is the folder of a channel's claims, one folder per agent.
func (r Root) Claims(channel string) string { return r.join("claims", channel) }

// AgentClaims is the folder of one agent's claims on a channel: its claim
// markers and reply tokens (and a crashed writer's temp files).
func (r Root) AgentClaims(channel, agent string) string { return r.join("claims", channel, agent) }

// Archive is the folder of a channel's archived messages, one folder per
// month (YYYY-MM) inside it.
func (r Root) Archive(channel string) string { return r.join("channels", channel, ArchiveDir) }

// ArchiveMonth is the folder of a channel's archived messages named in the
// month of t (UTC), archive/YYYY-MM.
func (r Root) ArchiveMonth(channel string, t time.Time) string {
	return r.join("channels", channel, ArchiveDir, t.UTC().Format(ArchiveMonthLayout))
}

// Docs is the folder of a channel's shared documents.
func (r Root) Docs(channel string) string { return r.join("docs", channel) }

// Tasks is the folder of a channel's task board.
func (r Root) Tasks(channel string) string { return r.join("tasks", channel) }

// Scripts is the folder of the seed-compatible entry points.
func (r Root) Scripts() string { return r.join("scripts") }

// Keys is the tree's keyring folder (package keyring), written only by
// the admin who ran 'collab init'.
func (r Root) Keys() string { return r.join("keys") }

// Workflows is the folder of the workflow instances' records and stop
// files (WORKFLOW--INSTANCE.json, .stop), made by the first collab run or
// start.
func (r Root) Workflows() string { return r.join("workflows") }

// Delegations is the folder of the delegated sessions' records
// (package sessions: ID.json), made by the first collab delegate.
func (r Root) Delegations() string { return r.join("delegations") }

// Bridges is the folder of the bridges' stream-publisher cursors
// (HOST.json, package bridge), made by the first collab bridge. It is not
// under state/, whose folders are agents'.
func (r Root) Bridges() string { return r.join("bridges") }
