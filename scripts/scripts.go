// Package scripts holds the seed-compatible entry points of this folder
// (send-message, who, watcher and the collab-exec they call), embedded,
// so that 'collab init' installs them into ROOT/scripts (docs/protocol.md#the-shared-tree, #commands)
// without deploy/install.sh. Only the files named in [Names] are
// scripts; this Go file is not one.
package scripts

import (
	"embed"
	"io/fs"
)

//go:embed collab-exec send-message watcher who
var files embed.FS

// Names are the scripts, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Read returns the script name's contents.
func Read(name string) ([]byte, error) { return fs.ReadFile(files, name) }
