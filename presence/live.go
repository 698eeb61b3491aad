package presence

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// MaxLiveProcesses is how many of a watcher's live processes a heartbeat
// lists, the largest first: a watcher with a high --live-max still writes
// a heartbeat well under [MaxSize]. Sessions and RSSBytes count them all.
const MaxLiveProcesses = 32

// Live is what a watcher's live sessions (collab watch --live) hold: the
// warm CLI processes open, the most it keeps (--live-max), and their
// resident memory, each process's being the sum over its process group
// (a CLI's children included).
type Live struct {
	Sessions  int           `json:"sessions"`  // processes open
	Max       int           `json:"max"`       // the most kept open
	RSSBytes  int64         `json:"rss_bytes"` // resident memory of them all; 0 unknown
	Processes []LiveProcess `json:"processes,omitempty"`
}

// LiveProcess is one warm CLI process.
type LiveProcess struct {
	Key      string `json:"key"`                 // the watcher's session key: a channel, or a channel and a thread
	PID      int    `json:"pid"`                 // the CLI's pid on the heartbeat's host, also its process group's
	RSSBytes int64  `json:"rss_bytes,omitempty"` // resident memory of its process group; absent: not measured yet
}

// Trim sorts l's processes, the largest first (then by key), and keeps
// the first MaxLiveProcesses.
func (l *Live) Trim() {
	slices.SortFunc(l.Processes, func(a, b LiveProcess) int {
		return cmp.Or(cmp.Compare(b.RSSBytes, a.RSSBytes), strings.Compare(a.Key, b.Key), cmp.Compare(a.PID, b.PID))
	})
	if len(l.Processes) > MaxLiveProcesses {
		l.Processes = l.Processes[:MaxLiveProcesses]
	}
}

// payload is l's part of the signed fields (see the package doc).
func (l *Live) payload() []string {
	f := []string{strconv.Itoa(l.Sessions), strconv.Itoa(l.Max), strconv.FormatInt(l.RSSBytes, 10), strconv.Itoa(len(l.Processes))}
	for _, p := range l.Processes {
		f = append(f, p.Key, strconv.Itoa(p.PID), strconv.FormatInt(p.RSSBytes, 10))
	}
	return f
}

// Joined is a person's own CLI session on the bus (collab join): the
// heartbeat is the join's, not a watcher's.
type Joined struct {
	CLI string `json:"cli"` // claude, codex or gemini
}
