package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// runInit creates the tree's folders and, with --group, hands them to a
// shared group: owned by the group, group-writable and set-group-ID, so
// every file and folder made later inside belongs to the group too.
func runInit(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := newFlags("init", stderr)
	flags.Usage = func() {
		fmt.Fprintf(stderr, "Usage: collab init [--root ROOT] [--group GROUP]\n\nCreate the shared tree's folders (SPEC §1). With --group, the folders\nbelong to GROUP, are group-writable, set-group-ID and sticky (but docs/,\nwhose documents everyone edits), so agents running as different users in\nGROUP share the tree and none can move or remove another's files;\nnothing is world-writable.\nROOT/keys, the keyring of trusted signing keys, is made writable by this\naccount only: run init as the admin account.\nRun it again to repair modes; files are never touched.\n\nFlags:\n")
		flags.PrintDefaults()
	}
	group := flags.String("group", "", "shared group (name or numeric id) that owns the tree's folders")
	asJSON := flags.Bool("json", false, `print a JSON array of the folders: {"path", "mode", "group"}`)
	rootf := rootFlag(flags)
	if err := parse(flags, args, getenv); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageErrorf("init: unexpected argument %q", flags.Arg(0))
	}
	root := tree.Resolve(*rootf, getenv)
	gid := -1
	if *group != "" {
		var err error
		if gid, err = lookupGroup(*group); err != nil {
			return usageErrorf("init: %v", err)
		}
	}
	for _, dir := range root.Folders() {
		if err := setMode(dir, gid, root.Shared(dir)); err != nil {
			if errors.Is(err, safedir.ErrSymlink) {
				return fmt.Errorf("init: %w; the tree's folders must be real folders", err)
			}
			return fmt.Errorf("init: %w", err)
		}
	}
	if gid >= 0 {
		// A tree from before the sticky bit: the folders made inside since
		// (channels, their archives, claims, task boards) get it too.
		for _, msg := range stickBelow(root) {
			fmt.Fprintf(stderr, "collab: init: warning: %s\n", msg)
		}
	}
	if err := root.CheckShared(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	// The keyring: written by this (admin) account only, even with
	// --group, so the agents cannot replace a key (package keyring).
	if err := keyring.Open(root.Keys()).Create(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	type folder struct {
		Path  string `json:"path"`
		Mode  string `json:"mode"`
		Group string `json:"group"`
	}
	out := []folder{}
	for _, dir := range append(root.Folders(), root.Keys()) {
		fi, err := statFolder(dir)
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
		owner := ""
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = groupName(int(st.Gid))
		}
		out = append(out, folder{dir, fi.Mode().String(), owner})
	}
	if *asJSON {
		return writeJSON(stdout, out)
	}
	for _, f := range out {
		fmt.Fprintf(stdout, "%s %-8s %s\n", f.Mode, f.Group, f.Path)
	}
	if gid >= 0 {
		fmt.Fprintln(stdout, "Each agent's files are writable by its own account alone; the folders are the group's, sticky (docs/ is everyone's).")
	}
	return nil
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
