//go:build !linux

package safedir

import "golang.org/x/sys/unix"

func renameNoReplace(dirfd int, from, to string) error { return unix.ENOTSUP }
