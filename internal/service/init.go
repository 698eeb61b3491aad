package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// InitRequest asks Init to make the tree.
type InitRequest struct {
	// Group, when set (a name or a number), is the shared group the
	// tree's folders are handed to.
	Group string
	// ExpireAfter are channels' settings Init writes, each CHANNEL=D:
	// the expiry of the channel's messages that set none
	// (delivery.ParseExpireAfter; "off" or "0": none). The channel's
	// folder is made if missing.
	ExpireAfter []string
}

// Folder is one folder of the tree as Init left it.
type Folder struct {
	Path  string `json:"path"`
	Mode  string `json:"mode"`
	Group string `json:"group"`
}

// Initialized is what Init did.
type Initialized struct {
	Folders []Folder
	// Made are the seed's entry points Init installed in ROOT/scripts
	// and the link ROOT/presence, when it made them.
	Made []string
	// Warnings are the folders Init could not repair (another account's,
	// when not run as root): they stay without the sticky bit; and the
	// scripts and the presence link it left as they were.
	Warnings []string
}

// Init creates the tree's folders at the Mount's root, or repairs their
// modes (files are never touched). Without a group no folder is
// world-writable. With a group the folders belong to it, are
// group-writable, set-group-ID and sticky (but docs/, whose documents
// everyone edits), so agents running as different accounts of the group
// share the tree and none can move or remove another's files; the
// folders made inside before the sticky bit get it too. The keyring is
// writable by this (admin) account only. A link where a folder should
// be is refused.
//
// Init also installs what the seed's scripts expect: the entry points of
// package scripts (who, send-message, watcher, collab-exec) in
// ROOT/scripts, each written when missing and never replaced (one that
// differs is left, with a warning: remove it and run Init again to take
// this collab's), and ROOT/presence, a relative link to
// signals/presence, where the original project's scripts read the
// heartbeats (made when nothing has that name; anything else there is
// left, with a warning).
func (m *Mount) Init(_ context.Context, req InitRequest) (Initialized, error) {
	root := m.cfg.Root
	var out Initialized
	gid := -1
	if req.Group != "" {
		var err error
		if gid, err = lookupGroup(req.Group); err != nil {
			return out, errkind.Wrap(errkind.Invalid, err)
		}
	}
	for _, dir := range root.Folders() {
		if err := setMode(dir, gid, root.Shared(dir)); err != nil {
			if errors.Is(err, safedir.ErrSymlink) {
				return out, fmt.Errorf("%w; the tree's folders must be real folders", err)
			}
			return out, err
		}
	}
	if gid >= 0 {
		out.Warnings = stickBelow(root)
	}
	if err := root.CheckShared(); err != nil {
		return out, err
	}
	// The keyring: written by this (admin) account only, even with a
	// group, so the agents cannot replace a key (package keyring).
	if err := keyring.Open(root.Keys()).Create(); err != nil {
		return out, err
	}
	for _, set := range req.ExpireAfter {
		if err := channelSettings(root, set); err != nil {
			return out, err
		}
	}
	made, warnings, err := seedLayout(root, m.cfg.Now())
	if err != nil {
		return out, err
	}
	out.Made, out.Warnings = made, append(out.Warnings, warnings...)
	for _, dir := range append(root.Folders(), root.Keys()) {
		fi, err := statFolder(dir)
		if err != nil {
			return out, err
		}
		owner := ""
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = groupName(int(st.Gid))
		}
		out.Folders = append(out.Folders, Folder{dir, fi.Mode().String(), owner})
	}
	return out, nil
}

// setMode makes the tree folder dir if missing, never world-writable, and
// with gid ≥ 0 owned by that group, group-writable and set-group-ID, and
// sticky unless shared (its files are everyone's to replace: the shared
// documents), so that no member of the group can rename or remove another
// member's files or folders (the keyring from the root, a message from
// its channel). The folders made later inside take the sticky bit from
// their parent (safedir.MkdirAll). The folder is reached with no symbolic
// link followed below the root (which tree.Resolve has made link-free): a
// link gives safedir.ErrSymlink.
func setMode(dir string, gid int, shared bool) error {
	d, err := safedir.Create(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	have := fi.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
	want := have &^ 0o002 // never world-writable
	if gid >= 0 {
		if err := d.Chown(-1, gid); err != nil {
			return fmt.Errorf("chown %s: %w", dir, err)
		}
		want |= 0o070 | fs.ModeSetgid
		if !shared {
			want |= fs.ModeSticky
		}
	}
	if want != have {
		if err := d.Chmod(want); err != nil {
			return fmt.Errorf("chmod %s: %w", dir, err)
		}
	}
	return nil
}

// stickyDepth is how deep below each of these tree folders other
// accounts' files live in folders of their own (channels/C/archive/M,
// claims/C/A, tasks/C/T).
var stickyDepth = map[string]int{"channels": 3, "claims": 2, "tasks": 2}

// stickBelow gives the sticky bit to every group-writable folder below
// the tree's channels, claims and tasks (to stickyDepth levels) that
// lacks it: folders made before 'collab init --group' set the bit, in
// which any member of the group could rename or remove another's files.
// No link is followed. It returns what it could not change (a folder of
// another account, when not run as root), for warnings.
func stickBelow(root tree.Root) []string {
	var problems []string
	for top, depth := range stickyDepth {
		base := filepath.Join(string(root), top)
		filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil // a file, a link, or gone
			}
			rel, _ := filepath.Rel(base, path)
			if rel == "." {
				return nil
			}
			if n := strings.Count(rel, string(filepath.Separator)) + 1; n > depth {
				return filepath.SkipDir
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			if m := fi.Mode(); m.Perm()&0o020 != 0 && m&fs.ModeSticky == 0 {
				if err := stick(path); err != nil {
					problems = append(problems, fmt.Sprintf("%s stays without the sticky bit: %v (run init as root, or its owner runs chmod +t)", path, err))
				}
			}
			return nil
		})
	}
	sort.Strings(problems)
	return problems
}

// stick adds the sticky bit to the folder at path, reached with no link.
func stick(path string) error {
	d, err := safedir.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	return d.Chmod(fi.Mode()&(fs.ModePerm|fs.ModeSetgid) | fs.ModeSticky)
}

// statFolder returns the file info of the tree folder dir, reached with no
// symbolic link followed.
func statFolder(dir string) (fs.FileInfo, error) {
	d, err := safedir.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Stat()
}

// lookupGroup returns the id of a group given by name or number.
func lookupGroup(s string) (int, error) {
	if g, err := user.LookupGroup(s); err == nil {
		return strconv.Atoi(g.Gid)
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return n, nil
	}
	return 0, fmt.Errorf("unknown group %q", s)
}

func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return strconv.Itoa(gid)
}

// channelSettings writes the settings file of a channel: its expiry, as
// set says (CHANNEL=D).
func channelSettings(root tree.Root, set string) error {
	ch, expireAfter, ok := strings.Cut(set, "=")
	if !ok {
		return errkind.Wrap(errkind.Invalid, fmt.Errorf("expire-after %q: want CHANNEL=DURATION", set))
	}
	if err := tree.CheckName("channel", ch); err != nil {
		return errkind.Wrap(errkind.Invalid, err)
	}
	d, err := delivery.ParseExpireAfter(expireAfter)
	if err != nil {
		return errkind.Wrap(errkind.Invalid, err)
	}
	s := delivery.ChannelSettings{}
	if d > 0 {
		s.ExpireAfter = d.String()
	}
	return delivery.WriteChannelSettings(root, ch, s)
}
