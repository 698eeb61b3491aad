package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// importers returns the module's non-test Go files (relative to the
// module root, UP from here) that import a path starting with prefix.
func importers(t *testing.T, up, prefix string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(up, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != up && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if path == prefix || strings.HasPrefix(path, prefix+"/") {
				rel, _ := filepath.Rel(up, p)
				out = append(out, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOneOwner: fsnotify is imported by fswake only, nats.go by natsbus
// only (and the harnesses), and watcher only by what assembles and runs
// watchers.
func TestOneOwner(t *testing.T) {
	const up = "../../.."
	tests := []struct {
		imp     string
		allowed []string // path prefixes of the files that may import it
	}{
		{"github.com/fsnotify/fsnotify", []string{"internal/plumbing/fswake/"}},
		{"github.com/nats-io/nats.go", []string{"internal/transport/natsbus/", "internal/testsupport/", "internal/dev/"}},
		// Those that assemble and run watchers (watchsetup, remotewatch,
		// a workflow's team in the layer); none borrows a helper.
		{"github.com/collabdev/collab/watcher", []string{"watcher/", "cmd/", "internal/dev/", "internal/service/workflows",
			"internal/agent/watchsetup/", "internal/agent/remotewatch/"}},
	}
	for _, tt := range tests {
		t.Run(tt.imp, func(t *testing.T) {
			for _, f := range importers(t, up, tt.imp) {
				ok := false
				for _, a := range tt.allowed {
					ok = ok || strings.HasPrefix(f, a)
				}
				if !ok {
					t.Errorf("%s imports %s", f, tt.imp)
				}
			}
		})
	}
}
