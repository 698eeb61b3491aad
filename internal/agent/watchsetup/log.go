package watchsetup

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/collabdev/collab/internal/plumbing/rotlog"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// keyAgent is the log attribute naming the agent.
const keyAgent = "agent"

// Logger logs text to stderr and JSON lines to ROOT/logs/AGENT.log,
// rotated by size (rotlog.MaxBytes, rotlog.Backups). done closes the file.
func Logger(root tree.Root, agent string, level slog.Level, stderr io.Writer) (_ *slog.Logger, done func(), _ error) {
	// No link is followed to the folder, nor at the file: a log folder or
	// name planted as a symlink cannot aim our appends elsewhere.
	logs, err := safedir.Create(root.Logs())
	if err != nil {
		return nil, nil, fmt.Errorf("watch: log folder: %w", err)
	}
	f, err := rotlog.Open(logs, agent+".log", rotlog.MaxBytes, rotlog.Backups)
	if err != nil {
		logs.Close()
		return nil, nil, fmt.Errorf("watch: log file %s: %w", root.Logs(), err)
	}
	opts := &slog.HandlerOptions{Level: level}
	h := slog.NewMultiHandler(slog.NewTextHandler(stderr, opts), slog.NewJSONHandler(f, opts))
	return slog.New(h).With(keyAgent, agent), func() { f.Close() }, nil
}
