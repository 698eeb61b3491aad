package proc

import (
	"errors"
	"syscall"
)

// PIDAlive reports whether a process with this PID exists on this host, by
// sending it signal 0: ESRCH means it does not; EPERM means it exists but
// belongs to someone else. A PID from a file written on another host means
// nothing here; callers compare hosts first.
func PIDAlive(pid int) bool {
	if pid <= 0 || pid > 1<<31-1 {
		return false // 0 and -N would address process groups; pid_t is 32 bits
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
