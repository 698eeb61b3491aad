package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrWorldWritable is wrapped by [Root.CheckShared] when a folder of the
// tree can be written by every user of a host and lacks the sticky bit.
var ErrWorldWritable = errors.New("tree: world-writable without the sticky bit")

// Folders returns the tree's fixed folders (docs/protocol.md#the-shared-tree), parents first, and
// the folders of records that the first collab run, delegate or bridge
// would make: 'collab init' makes them all, so that each belongs to the
// tree's owner with the tree's modes (sticky), not to whichever member of
// the group happened to make it first.
func (r Root) Folders() []string {
	return []string{
		string(r),
		r.Channels(),
		r.join("signals"), r.Presence(),
		r.join("registry"), r.Registry(),
		r.Logs(),
		r.States(),
		r.join("claims"),
		r.join("docs"),
		r.join("tasks"),
		r.Scripts(),
		r.Workflows(), r.Delegations(), r.Bridges(),
	}
}

// Shared reports whether dir, one of the tree's folders, holds files that
// every member of the tree's group may replace or remove: the shared
// documents (ROOT/docs), and so not sticky. In every other folder each
// file is its writer's, and a shared-group tree makes the folder sticky
// ('collab init --group') so that no other member can rename or remove it.
func (r Root) Shared(dir string) bool { return dir == r.join("docs") }

// ErrSymlinkedFolder is wrapped by [Root.CheckShared] when one of the
// tree's fixed folders (other than the root itself) is a symbolic link.
var ErrSymlinkedFolder = errors.New("tree: a symbolic link, not a folder")

// CheckShared checks the root and those of its fixed folders that exist:
// none may be world-writable without the sticky bit (there any local user
// could replace or delete other users' files: a presence file, a claim, a
// message), and none but the root may be a symbolic link (which would take
// collab's writes out of the tree). A watcher refuses to run on a tree that
// fails the first check unless told to, and always on the second. A
// missing root is reported as is (fs.ErrNotExist).
func (r Root) CheckShared() error {
	for i, dir := range r.Folders() {
		if i > 0 {
			if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return fmt.Errorf("%s: %w", dir, ErrSymlinkedFolder)
			}
		}
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

// Unsticky returns those of the tree's fixed folders, and of the folders
// of the channels named (the channel and its claims), that exist, are
// writable by their group and are not sticky, other than the shared ones
// ([Root.Shared]): folders in which any member of the group can rename or
// remove another member's files (a tree made before 'collab init --group'
// set the sticky bit, which running it again repairs; a channel folder
// made by hand, which its owner repairs with chmod +t).
func (r Root) Unsticky(channels ...string) []string {
	var out []string
	dirs := r.Folders()
	for _, ch := range channels {
		if ValidName(ch) {
			dirs = append(dirs, r.Channel(ch), r.Claims(ch))
		}
	}
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() || r.Shared(dir) {
			continue
		}
		if m := fi.Mode(); m.Perm()&0o020 != 0 && m&fs.ModeSticky == 0 {
			out = append(out, dir)
		}
	}
	return out
}

// ErrNotTree is wrapped by [Root.Check] when the root is not a collab tree:
// missing, not a folder, or without its channels/ folder.
var ErrNotTree = errors.New("tree: not a collab tree")

// notTreeError says what is missing from a root that is not a collab tree.
type notTreeError struct {
	root    Root
	missing string
}

func (e *notTreeError) Error() string {
	return fmt.Sprintf("%s is not a collab tree (%s); is the shared folder mounted? Run 'collab init' to make one", string(e.root), e.missing)
}

func (e *notTreeError) Unwrap() error { return ErrNotTree }

// Check reports whether r is a collab tree: the root and its channels/
// folder exist and are folders. Only 'collab init' makes a tree; every
// other command checks first, so that on a host where the shared folder
// is not mounted nothing lands on the local disk under the mount point.
// The error wraps [ErrNotTree] and says what is missing. A tree written
// in a newer protocol than this code's is refused too (CheckProtocol).
func (r Root) Check() error {
	for _, dir := range []struct{ path, name string }{{string(r), "the folder"}, {r.Channels(), "channels/"}} {
		fi, err := os.Stat(dir.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if dir.path == string(r) {
				return &notTreeError{r, "it does not exist"}
			}
			return &notTreeError{r, "no " + dir.name + " folder"}
		case err != nil:
			return err
		case !fi.IsDir():
			return &notTreeError{r, dir.path + " is not a folder"}
		}
	}
	return r.CheckProtocol()
}
