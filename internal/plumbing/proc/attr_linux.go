package proc

import "syscall"

// procAttr puts the child in a group of its own, and has the kernel kill it
// if the watcher dies without cleaning up (SIGKILL, a crash).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
