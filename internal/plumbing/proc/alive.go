package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// PIDAlive reports whether a process with this PID runs on this host. It
// is collab's one liveness rule (who, delegate ls, ls, the watcher's
// takeover, claims and jobs all ask it): the process exists (signal 0:
// ESRCH means it does not; EPERM means it exists but belongs to someone
// else) and is not a zombie, a process that has exited and waits for its
// parent to reap it (state Z or X in /proc/PID/stat; where there is no
// /proc, no zombie is seen). A PID from a file written on another host
// means nothing here; callers compare hosts first.
func PIDAlive(pid int) bool {
	if pid <= 0 || pid > 1<<31-1 {
		return false // 0 and -N would address process groups; pid_t is 32 bits
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	st, err := readStat(pid)
	return err != nil || !st.exited()
}

// stat is what collab reads of /proc/PID/stat.
type stat struct {
	state byte // R, S, D, Z, X, …
	pgrp  int
}

// exited reports a zombie (Z) or a process being torn down (X, x).
func (s stat) exited() bool { return s.state == 'Z' || s.state == 'X' || s.state == 'x' }

// readStat reads process pid's /proc/PID/stat.
func readStat(pid int) (stat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	return parseStat(data)
}

// parseStat parses a /proc/PID/stat line: "pid (comm) state ppid pgrp …",
// where comm may hold anything but the last ')'.
func parseStat(data []byte) (stat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return stat{}, errors.New("proc: stat: no comm")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return stat{}, errors.New("proc: stat: too few fields")
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return stat{}, fmt.Errorf("proc: stat: pgrp: %w", err)
	}
	return stat{state: f[0][0], pgrp: pgrp}, nil
}
