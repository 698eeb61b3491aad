package service

import (
	"encoding/json"
	"testing"

	"github.com/collabdev/collab/internal/agent/watchsetup"
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
}

func isZeroSettings(s watchsetup.Settings) bool {
	b, _ := json.Marshal(s)
	z, _ := json.Marshal(watchsetup.Settings{})
	return string(b) == string(z)
}
