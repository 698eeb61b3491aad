package main

import (
	"os"
	"strings"
	"testing"
)

// TestWatchBudgetWarning: `collab watch --budget-usd` with a CLI that
// reports no cost (here the command adapter) warns at start that the
// budget cannot trip; with claude, which reports cost, it does not.
func TestWatchBudgetWarning(t *testing.T) {
	const warning = "budget cannot trip: the CLI reports no cost"
	for _, tt := range []struct {
		cli  string
		warn bool
	}{
		{"command", true},
		{"claude", false},
	} {
		t.Run(tt.cli, func(t *testing.T) {
			t.Parallel()
			w := startWatcher(t, newTree(t), "agent", "dev", nil, "--cli", tt.cli, "--cmd", os.Args[0], "--budget-usd", "2.5")
			// The warning is logged before "watching"; the presence
			// startWatcher waited for may be seen before stderr's pipe is
			// copied, so wait for the line that follows the warning.
			waitFor(t, func() bool { return strings.Contains(w.stderr.String(), "msg=watching") })
			log := w.stderr.String()
			if got := strings.Contains(log, warning) && strings.Contains(log, "budget_usd=2.5") && strings.Contains(log, "cli="+tt.cli); got != tt.warn {
				t.Errorf("warning logged: %v, want %v; log:\n%s", got, tt.warn, log)
			}
		})
	}
}
