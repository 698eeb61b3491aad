package service

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/scripts"
)

// seedLayout puts in the tree what the seed's scripts expect there: the
// entry points of package scripts in ROOT/scripts, and ROOT/presence, a
// link to signals/presence for the original project's scripts. It
// returns the paths it made and warnings for what it left as it was.
func seedLayout(root tree.Root, now time.Time) (made, warnings []string, err error) {
	if err := writeVersion(root, now); err != nil {
		return nil, nil, err
	}
	made, warnings, err = installScripts(root)
	if err != nil {
		return nil, nil, err
	}
	link, warn, err := linkPresence(root)
	if err != nil {
		return nil, nil, err
	}
	if link != "" {
		made = append(made, link)
	}
	if warn != "" {
		warnings = append(warnings, warn)
	}
	return made, warnings, nil
}

// installScripts writes each of package scripts' entry points that
// ROOT/scripts lacks (atomically, executable: safedir.Dir.Publish). One
// that is there is never replaced: when it differs (a local edit, or an
// older collab's) it is left with a warning that says how to take this
// collab's.
func installScripts(root tree.Root) (made, warnings []string, err error) {
	d, err := safedir.Open(root.Scripts())
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	for _, name := range scripts.Names() {
		want, err := scripts.Read(name)
		if err != nil {
			return nil, nil, err
		}
		path := filepath.Join(root.Scripts(), name)
		have, _, err := d.ReadFile(name, int64(len(want)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			err := d.Publish(name, want, 0o755)
			if errors.Is(err, fs.ErrExist) {
				continue // another init's, this moment
			}
			if err != nil {
				return nil, nil, fmt.Errorf("install %s: %w", path, err)
			}
			made = append(made, path)
		case err == nil && bytes.Equal(have, want):
		case err == nil || errors.Is(err, safedir.ErrTooLarge):
			warnings = append(warnings, fmt.Sprintf("%s differs from this collab's and is left as it is; to take collab's, remove it and run 'collab init' again", path))
		default:
			warnings = append(warnings, fmt.Sprintf("%s is left as it is: %v", path, err))
		}
	}
	return made, warnings, nil
}

// linkPresence makes ROOT/presence a relative link to signals/presence
// when there is nothing of that name. A link that points elsewhere, or a
// folder or file of that name (a tree of the original project's), is
// left with a warning.
func linkPresence(root tree.Root) (made, warning string, err error) {
	path := root.PresenceLink()
	for range 2 {
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			err := os.Symlink(tree.PresenceLinkTarget, path)
			if errors.Is(err, fs.ErrExist) {
				continue // made this moment: look again
			}
			if err != nil {
				return "", "", fmt.Errorf("link %s: %w", path, err)
			}
			return path, "", nil
		case err != nil:
			return "", "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			return "", fmt.Sprintf("%s is not a link to %s: scripts that read it do not see collab's heartbeats (move what it holds to %s and remove it, then run 'collab init' again)",
				path, tree.PresenceLinkTarget, tree.PresenceLinkTarget), nil
		}
		if target, err := os.Readlink(path); err != nil || filepath.Clean(target) != tree.PresenceLinkTarget {
			return "", fmt.Sprintf("%s points at %q, not %s: scripts that read it do not see collab's heartbeats", path, target, tree.PresenceLinkTarget), nil
		}
		return "", "", nil
	}
	return "", "", fmt.Errorf("link %s: it keeps changing", path)
}

// writeVersion publishes ROOT/collab.json, the tree's protocol version
// (tree.Protocol), when it is missing; one there is never replaced by
// init (raising it is a migration's). A tree in a newer protocol than
// this collab's is refused.
func writeVersion(root tree.Root, now time.Time) error {
	if err := root.CheckProtocol(); err != nil {
		return err
	}
	d, err := safedir.Open(string(root))
	if err != nil {
		return err
	}
	defer d.Close()
	err = d.Publish(tree.VersionName, tree.NewVersion(now), 0o644)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("write the protocol version: %w", err)
	}
	return nil
}
