package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrWorldWritable is wrapped by [Root.CheckShared] when a folder of the
// tree can be written by every user of a host and lacks the sticky bit.
var ErrWorldWritable = errors.New("world-writable without the sticky bit")

// Folders returns the tree's fixed folders (SPEC §1), parents first.
func (r Root) Folders() []string {
	return []string{
		string(r),
		r.Channels(),
		r.join("signals"), r.Presence(),
		r.join("registry"), r.Registry(),
		r.Logs(),
		r.join("state"),
		r.join("claims"),
		r.join("docs"),
		r.join("tasks"),
		r.Scripts(),
	}
}

// CheckShared checks that the root and those of its fixed folders that
// exist are not world-writable without the sticky bit. In such a folder any
// local user could replace or delete other users' files (a presence file,
// a claim, a message), so a watcher refuses to run there unless told to.
// A missing root is reported as is (fs.ErrNotExist).
func (r Root) CheckShared() error {
	for i, dir := range r.Folders() {
		fi, err := os.Stat(dir)
		if err != nil {
			if i > 0 && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s: not a folder", dir)
		}
		if m := fi.Mode(); m.Perm()&0o002 != 0 && m&fs.ModeSticky == 0 {
			return fmt.Errorf("%s (mode %v): %w; run chmod o-w (use a shared group, see 'collab init --group') or chmod +t", dir, m, ErrWorldWritable)
		}
	}
	return nil
}
