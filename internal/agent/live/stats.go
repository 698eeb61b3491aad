package live

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/collabdev/collab/presence"
)

// RSSEvery is how long a reading of the processes' resident memory is
// reused by [Pool.Live]: a reading scans /proc (a few milliseconds for a
// hundred processes), and a watcher asks at each change of its state.
const RSSEvery = 5 * time.Second

// usage is what Pool.Live keeps between calls: the pool's sessions as
// its goroutine last left them, and the last reading of their memory.
type usage struct {
	sessions sessionList // written by the pool's goroutine

	mu   sync.Mutex
	at   time.Time                            // when the last reading started; zero: none
	busy bool                                 // a reading is under way
	rss  map[int]groupUsage                   // by process group, as last read
	read func(pgids []int) map[int]groupUsage // default groupRSS
}

// groupUsage is one process group's resident memory and processes.
type groupUsage struct {
	rss   int64
	procs int
}

// Live reports the open sessions (presence's live field): each one's key
// and CLI pid, and the resident memory of its process group (the CLI and
// whatever it started in its group). The memory is the last reading of
// /proc, taken in the background at most every RSSEvery: a call returns
// at once, and a process started since the last reading has none yet. It
// never waits for the pool's goroutine either, which may be starting a
// process. Where /proc cannot be read (not Linux) no memory is reported.
func (p *Pool) Live() *presence.Live {
	stats := p.use.sessions.load()
	l := &presence.Live{Sessions: len(stats), Max: p.cfg.Max}
	pgids := make([]int, len(stats))
	for i, s := range stats {
		pgids[i] = s.PID
	}
	rss := p.use.reading(pgids, time.Now())
	for _, s := range stats {
		g := rss[s.PID]
		l.RSSBytes += g.rss
		l.Processes = append(l.Processes, presence.LiveProcess{Key: s.Key, PID: s.PID, RSSBytes: g.rss})
	}
	l.Trim()
	return l
}

// reading returns the last reading of the process groups' memory, and
// starts another in the background when it is RSSEvery old: a scan of
// /proc takes milliseconds (more on a host with many processes), which
// the caller (a watcher's loop) should not wait for.
func (u *usage) reading(pgids []int, now time.Time) map[int]groupUsage {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(pgids) > 0 && !u.busy && (u.at.IsZero() || now.Sub(u.at) >= RSSEvery) {
		u.busy, u.at = true, now
		read := u.read
		if read == nil {
			read = groupRSS
		}
		go func() {
			rss := read(pgids)
			u.mu.Lock()
			defer u.mu.Unlock()
			u.rss, u.busy = rss, false
		}()
	}
	return u.rss
}

// sessionList holds the sessions as the pool's goroutine last left them.
type sessionList struct {
	mu sync.Mutex
	s  []Stat
}

func (a *sessionList) store(s []Stat) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.s = s
}

func (a *sessionList) load() []Stat {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.s
}

// groupRSS sums VmRSS (/proc/PID/status) over the processes of each of
// the process groups pgids, found by the pgid in /proc/PID/stat. A
// process that goes away mid-scan is left out.
func groupRSS(pgids []int) map[int]groupUsage {
	want := make(map[int]bool, len(pgids))
	for _, g := range pgids {
		want[g] = true
	}
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make(map[int]groupUsage, len(pgids))
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		g, ok := statPgid(stat)
		if !ok || !want[g] {
			continue
		}
		status, err := os.ReadFile("/proc/" + name + "/status")
		if err != nil {
			continue
		}
		u := out[g]
		u.rss += statusKB(status, "VmRSS") << 10
		u.procs++
		out[g] = u
	}
	return out
}

// statPgid reads the process group (the fifth field) of /proc/PID/stat,
// after the command name in parentheses, which may hold anything.
func statPgid(stat []byte) (int, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:]) // state, ppid, pgrp, …
	if len(f) < 3 {
		return 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil || g <= 0 {
		return 0, false
	}
	return g, true
}

// statusKB reads the "KEY: N kB" line of /proc/PID/status; 0 without
// one (a kernel thread, a zombie).
func statusKB(status []byte, key string) int64 {
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte(key+":"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	return 0
}
