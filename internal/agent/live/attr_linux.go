package live

import "syscall"

// procAttr puts the process in a group of its own, and has the kernel
// kill it if the watcher dies (SIGKILL, a crash).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
