package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// phase is where in a message's handling a watcher was when it was
// SIGKILLed, as its JSON log (and its state file) show after its death.
type phase string

const (
	phaseStartup     phase = "start-up (not watching yet)"
	phaseIdle        phase = "idle (nothing queued, state saved)"
	phaseBeforeClaim phase = "before claim"
	phaseAfterClaim  phase = "after claim"
	phaseCLI         phase = "during the CLI"
	phaseAfterReply  phase = "after the reply, before the state save"
)

// requiredPhases are the kill points the issue names; scenario 2 fails
// when one of them was never hit.
var requiredPhases = []phase{phaseBeforeClaim, phaseAfterClaim, phaseCLI, phaseAfterReply}

// phaseOf reads what a watcher logged from offset off of the agent's JSON
// log (the watcher is dead: the log is final) and says where it was:
//
//   - no "watching" line: start-up;
//   - the last of "queued", "claimed", "running", "replied" decides;
//   - after "replied" for message M, the state file tells whether the save
//     that follows the reply happened: the saved state still lists M as
//     pending if it did not.
//
// A "watching" line whose pending count is above zero counts as "queued".
func phaseOf(e *env, off int64) (phase, error) {
	data, err := readFrom(e.logPath(), off)
	if err != nil {
		return "", err
	}
	p, last := phaseStartup, ""
	for line := range bytes.Lines(data) {
		var l struct {
			Msg     string `json:"msg"`
			MsgID   string `json:"msg_id"`
			Pending int    `json:"pending"`
		}
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		switch l.Msg {
		case "watching":
			p = phaseIdle
			if l.Pending > 0 {
				p = phaseBeforeClaim
			}
		case "queued":
			p = phaseBeforeClaim
		case "claimed":
			p = phaseAfterClaim
		case "running":
			p = phaseCLI
		case "replied":
			p, last = phaseAfterReply, l.MsgID
		}
	}
	if p == phaseAfterReply {
		pending, err := statePending(e)
		if err != nil {
			return "", err
		}
		if !slices.Contains(pending, last) {
			p = phaseIdle
		}
	}
	return p, nil
}

// statePending returns the ids the watcher's saved state lists as pending.
func statePending(e *env) ([]string, error) {
	data, err := os.ReadFile(e.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f struct {
		State struct {
			Pending []struct {
				ID string `json:"id"`
			} `json:"pending"`
		} `json:"state"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("state file: %w", err)
	}
	var ids []string
	for _, p := range f.State.Pending {
		ids = append(ids, p.ID)
	}
	return ids, nil
}

// readFrom returns a file's bytes from offset off on.
func readFrom(path string, off int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// fileSize is the size of path, 0 if it does not exist.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logFollower reports, with inotify, each new line of a log file the moment
// it is written: a kill aimed at a log line lands within microseconds of
// it, before the watcher has done much more.
type logFollower struct {
	f       *os.File
	fd      int // inotify
	partial []byte
	buf     []byte
}

func followLog(path string, off int64) (*logFollower, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		unix.Close(fd)
		return nil, err
	}
	return &logFollower{f: f, fd: fd, buf: make([]byte, 64<<10)}, nil
}

func (l *logFollower) close() {
	l.f.Close()
	unix.Close(l.fd)
}

// skip moves to the end of the file: lines written so far are not waited
// for.
func (l *logFollower) skip() {
	l.f.Seek(0, io.SeekEnd)
	l.partial = l.partial[:0]
	l.drain()
}

func (l *logFollower) drain() {
	var ev [4096]byte
	for {
		if n, err := unix.Read(l.fd, ev[:]); n <= 0 || err != nil {
			return
		}
	}
}

// until waits until a new line has msg (its JSON "msg" field) one of msgs,
// or d passes, or stop closes. It reports whether such a line came.
func (l *logFollower) until(ctx context.Context, d time.Duration, stop <-chan struct{}, msgs ...string) (bool, error) {
	deadline := time.Now().Add(d)
	for {
		for {
			n, err := l.f.Read(l.buf)
			if n > 0 {
				l.partial = append(l.partial, l.buf[:n]...)
				for {
					i := bytes.IndexByte(l.partial, '\n')
					if i < 0 {
						break
					}
					var line struct {
						Msg string `json:"msg"`
					}
					ok := json.Unmarshal(l.partial[:i], &line) == nil && slices.Contains(msgs, line.Msg) || textMsg(l.partial[:i], msgs)
					l.partial = l.partial[i+1:]
					if ok {
						return true, nil
					}
				}
			}
			if err == io.EOF || n == 0 {
				break
			}
			if err != nil {
				return false, err
			}
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		select {
		case <-stop:
			return false, nil
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(min(left, 10*time.Millisecond)/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			return false, err
		}
		l.drain()
	}
}

// memSampler samples a process's resident memory (VmRSS) and its peak
// (VmHWM) from /proc/PID/status until stopped.
type memSampler struct {
	pid     int
	stop    chan struct{}
	done    chan struct{}
	samples int
	maxRSS  int64 // bytes
	hwm     int64 // bytes, the last VmHWM read
}

func sampleMemory(pid int, every time.Duration) *memSampler {
	m := &memSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			m.sample()
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *memSampler) sample() {
	rss, hwm, err := procMemory(m.pid)
	if err != nil {
		return
	}
	m.samples++
	m.maxRSS = max(m.maxRSS, rss)
	m.hwm = max(m.hwm, hwm)
}

// end takes a last sample and stops.
func (m *memSampler) end() {
	close(m.stop)
	<-m.done
	m.sample()
}

// procMemory reads VmRSS and VmHWM, in bytes, from /proc/PID/status.
func procMemory(pid int) (rss, hwm int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range bytes.Lines(data) {
		var kb int64
		switch {
		case bytes.HasPrefix(line, []byte("VmRSS:")):
			if _, err := fmt.Sscanf(string(line), "VmRSS: %d kB", &kb); err == nil {
				rss = kb << 10
			}
		case bytes.HasPrefix(line, []byte("VmHWM:")):
			if _, err := fmt.Sscanf(string(line), "VmHWM: %d kB", &kb); err == nil {
				hwm = kb << 10
			}
		}
	}
	if hwm == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
	}
	return rss, hwm, nil
}
