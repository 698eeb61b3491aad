package worktree

import "testing"

// TestStatusTakesNoLock: Status never takes the index lock the agent's own
// git needs (git status refreshes the index under index.lock otherwise).
func TestStatusTakesNoLock(t *testing.T) {
	for _, kv := range gitEnv() {
		if kv == "GIT_OPTIONAL_LOCKS=0" {
			return
		}
	}
	t.Error("git runs with optional locks: a status while the agent commits can fail its commit on index.lock")
}
