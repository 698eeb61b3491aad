package runenv_test

import (
	"slices"
	"testing"

	"github.com/collabdev/collab/internal/agent/runenv"
)

func TestRunHops(t *testing.T) {
	tests := []struct {
		name, v string
		want    int
	}{
		{"outside a run", "", -1},
		{"top", "0", 0},
		{"deep", "5", 5},
		{"negative", "-2", -1},
		{"not a number", "two", -1},
		{"spaces", " 2", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runenv.RunHops(func(k string) string {
				if k == runenv.Hops {
					return tt.v
				}
				return ""
			})
			if got != tt.want {
				t.Errorf("RunHops(%s=%q) = %d, want %d", runenv.Hops, tt.v, got, tt.want)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"message", runenv.Message{Root: "/t", Agent: "bob", Channel: "dev", ID: "m1", From: "alice", Hops: 2}.Env(),
			[]string{"COLLAB_ROOT=/t", "COLLAB_AGENT=bob", "COLLAB_CHANNEL=dev", "COLLAB_MESSAGE_ID=m1", "COLLAB_FROM=alice", "COLLAB_HOPS=2"}},
		{"watcher, least", runenv.Watcher{MaxHops: 6}.Env(),
			[]string{"COLLAB_MAX_HOPS=6", "COLLAB_KEY="}},
		{"watcher, all", runenv.Watcher{MaxHops: 3, BudgetUSD: 1.5, BudgetTokens: 1000, Key: "/k/bob.key", Path: "/bin", StateDir: "/s"}.Env(),
			[]string{"COLLAB_MAX_HOPS=3", "COLLAB_BUDGET_USD=1.5", "COLLAB_BUDGET_TOKENS=1000", "COLLAB_KEY=/k/bob.key", "PATH=/bin", "COLLAB_REMOTE=1", "COLLAB_STATE_DIR=/s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Errorf("Env() = %q, want %q", tt.got, tt.want)
			}
		})
	}
}
