package service

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/workflow"
)

// TestAgentSettingsDefaults: a workflow agent with no keys has the watch
// settings of a flag-less collab watch: zero values, the defaults.
func TestAgentSettingsDefaults(t *testing.T) {
	s := agentSettings(watchsetup.Settings{}, workflow.Agent{Name: "reviewer"}, "reviewer--x", "ch")
	want := watchsetup.Settings{Agent: "reviewer--x", Aliases: []string{"reviewer"}, Channels: []string{"ch"}}
	if s.Agent != want.Agent || len(s.Aliases) != 1 || s.Aliases[0] != "reviewer" || len(s.Channels) != 1 {
		t.Fatalf("got %+v", s)
	}
	s.Aliases, s.Channels, s.Agent = nil, nil, ""
	if !isZeroSettings(s) {
		t.Errorf("an agent with no keys has settings %+v, want zero (the defaults)", s)
	}
	zero := 0
	if s := agentSettings(watchsetup.Settings{}, workflow.Agent{Name: "a", Context: &zero}, "a--x", "ch"); s.Context != -1 {
		t.Errorf("context: 0 is %d, want -1 (none)", s.Context)
	}
	yes := true
	if s := agentSettings(watchsetup.Settings{}, workflow.Agent{Name: "a", CLI: "claude", Live: &yes}, "a--x", "ch"); !s.Live {
		t.Errorf("live: true gave settings %+v, want Live", s)
	}
}

func isZeroSettings(s watchsetup.Settings) bool {
	b, _ := json.Marshal(s)
	z, _ := json.Marshal(watchsetup.Settings{})
	return string(b) == string(z)
}

// TestAgentSettingsBase: an agent's watcher takes the team's shared
// settings (the door's keyring, NATS, poll, heartbeat, grace and log
// level) and its own keys, never another agent's.
func TestAgentSettingsBase(t *testing.T) {
	base := watchsetup.Settings{Keyring: "/k", AllowWritableKeyring: true, NATS: &natsbus.Options{URL: "nats://h"},
		Poll: time.Second, Heartbeat: 2 * time.Second, Grace: 3 * time.Second, LogLevel: "debug",
		Agent: "other", Channels: []string{"elsewhere"}, CLI: "gemini"}
	s := agentSettings(base, workflow.Agent{Name: "coder", CLI: "claude"}, "coder--i1", "ch")
	if s.Keyring != "/k" || !s.AllowWritableKeyring || s.NATS == nil || s.NATS.URL != "nats://h" ||
		s.Poll != time.Second || s.Heartbeat != 2*time.Second || s.Grace != 3*time.Second || s.LogLevel != "debug" {
		t.Errorf("shared settings lost: %+v", s)
	}
	if s.Agent != "coder--i1" || len(s.Channels) != 1 || s.Channels[0] != "ch" || s.CLI != "claude" {
		t.Errorf("agent's own settings: %+v", s)
	}
}
