package watcher_test

import (
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/watcher"
)

// TestBudgetNoCostWarning: a budget with a CLI that reports neither cost
// nor tokens (any command) can never trip, and the watcher says so once
// at start; with claude (cost), codex and gemini (tokens, priced), a
// Runner that does not say, or no budget, it says nothing.
func TestBudgetNoCostWarning(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		runner watcher.Runner
		budget float64
		tokens int64
		warn   bool
	}{
		{"codex", &codex.Adapter{Bin: "/nonexistent"}, 5, 0, false},
		{"gemini", &gemini.Adapter{Bin: "/nonexistent"}, 5, 0, false},
		{"command", &modelcli.Command{Argv: []string{"/nonexistent"}}, 5, 0, true},
		{"command with a token budget", &modelcli.Command{Argv: []string{"/nonexistent"}}, 0, 1000, true},
		{"claude", &claude.Adapter{Bin: "/nonexistent"}, 5, 0, false},
		{"runner that does not say", &fakeRunner{}, 5, 0, false},
		{"codex without a budget", &codex.Adapter{Bin: "/nonexistent"}, 0, 0, false},
		{"command without a budget", &modelcli.Command{Argv: []string{"/nonexistent"}}, 0, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config(tree.Root(t.TempDir()), tt.runner)
			cfg.CLI = tt.name
			cfg.BudgetUSD = tt.budget
			cfg.BudgetTokens = tt.tokens
			h := start(t, cfg)
			got := h.logs.find("budget cannot trip: the CLI reports no cost, so every run counts as free", "cli", tt.name)
			if n := map[bool]int{true: 1, false: 0}[tt.warn]; len(got) != n {
				t.Fatalf("%d warnings, want %d", len(got), n)
			}
			if tt.warn && (got[0]["level"] != "WARN" || got[0]["budget_usd"] != tt.budget) {
				t.Errorf("warning %v, want level WARN and budget_usd %v", got[0], tt.budget)
			}
		})
	}
}
