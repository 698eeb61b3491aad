package safedir

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/internal/plumbing/randhex"
)

// Reserve makes name a regular file holding size bytes of allocated disk
// space, so that removing it later frees that much room on a full disk (a
// ballast file). It allocates with fallocate(2) and, where the filesystem
// cannot (NFSv3, some FUSE filesystems), by writing zeros; a filesystem
// that compresses or deduplicates zeros may still not hold the space. An
// existing file of at least size bytes is kept as it is. The file is
// published whole (temp, fsync, rename, directory fsync); on failure,
// ENOSPC included, nothing is left behind.
func (d *Dir) Reserve(name string, size int64) error {
	if err := checkName(name); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil &&
		st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size >= size && st.Blocks*512 >= size {
		return nil
	}
	var tmp string
	var err error
	for range 10 {
		tmp = "." + name + "." + randhex.String(4) + ".tmp"
		if err = d.allocate(tmp, size); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("reserve %s: %w", name, err)
	}
	if err := unix.Renameat(d.fd(), tmp, d.fd(), name); err != nil {
		unix.Unlinkat(d.fd(), tmp, 0)
		return pathErr("reserve", name, err)
	}
	return d.sync()
}

// allocate creates tmp (O_EXCL) with size bytes allocated, fsynced and
// closed. On failure it removes what it created.
func (d *Dir) allocate(tmp string, size int64) (err error) {
	f, err := d.open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, sharedPerm(FilePerm))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			unix.Unlinkat(d.fd(), tmp, 0)
		}
	}()
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		zeros := make([]byte, 64<<10)
		err = nil
		for left := size; left > 0 && err == nil; left -= int64(len(zeros)) {
			_, err = f.Write(zeros[:min(left, int64(len(zeros)))])
		}
	}
	if err != nil {
		return err
	}
	return f.Sync()
}
