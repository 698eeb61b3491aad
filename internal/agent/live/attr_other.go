//go:build !linux

package live

import "syscall"

// procAttr puts the process in a group of its own.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
