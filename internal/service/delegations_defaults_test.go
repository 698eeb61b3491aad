package service

import "testing"

// TestDelegateDefaultsFrom: a delegation asked from inside a model run
// takes the watcher's limits, worktree folder, CLI and depth from the
// run's environment; what is not a number is no default.
func TestDelegateDefaultsFrom(t *testing.T) {
	env := map[string]string{"COLLAB_DELEGATE_CLI": "codex", "COLLAB_DELEGATE_CMD": "codex exec", "COLLAB_WORKTREES": "/w",
		"COLLAB_DELEGATION_DEPTH": "2", "COLLAB_MAX_HOPS": "7", "COLLAB_BUDGET_USD": "1.5", "COLLAB_BUDGET_TOKENS": "x",
		"XDG_CONFIG_HOME": "/cfg"}
	d := DelegateDefaultsFrom(func(k string) string { return env[k] })
	if d.CLI != "codex" || d.Cmd != "codex exec" || d.Worktrees != "/w" || d.Depth != 2 || d.MaxHops != 7 ||
		d.BudgetUSD != 1.5 || d.BudgetTokens != 0 || d.KeyDir == "" {
		t.Errorf("DelegateDefaultsFrom = %+v", d)
	}
}
