package delivery

import (
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/presence"
)

func TestCell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "-"},
		{"vm-2", "vm-2"},
		{"a b", `a\x20b`},
		{"a\tb\nc", `a\x09b\x0ac`},
		{"\x1b[31mred", `\x1b[31mred`},
		{"höst", "höst"},
	}
	for _, tt := range tests {
		if got := Cell(tt.in); got != tt.want {
			t.Errorf("Cell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestWhoTableLive: the LIVE column shows an awake agent's warm processes
// and their memory, only when some agent reports them.
func TestWhoTableLive(t *testing.T) {
	now := time.Now()
	awake := func(agent string, l *presence.Live) AgentRow {
		return AgentRow{Agent: agent, State: presence.AwakeIdle, Status: &presence.Status{AgentID: agent, State: presence.StateAwake, Live: l}}
	}
	rows := []AgentRow{
		awake("a", &presence.Live{Sessions: 3, Max: 8, RSSBytes: 412_300_000}),
		awake("b", &presence.Live{Sessions: 1, Max: 4}), // not measured yet
		awake("c", nil),
		{Agent: "d", State: presence.Stale, Status: &presence.Status{AgentID: "d", State: presence.StateAwake, Live: &presence.Live{Sessions: 2, Max: 4}}},
	}
	got := WhoTable(rows, now)
	if h := got[0]; h[len(h)-1] != "LIVE" {
		t.Fatalf("header %v: no LIVE column", h)
	}
	for i, want := range []string{"3/8,412MB", "1/4", "-", "-"} {
		if row := got[i+1]; row[len(row)-1] != want {
			t.Errorf("%s: LIVE %q, want %q", row[0], row[len(row)-1], want)
		}
	}
	if h := WhoTable(rows[2:3], now)[0]; slices.Contains(h, "LIVE") {
		t.Errorf("header %v: a LIVE column with no agent live", h)
	}
}

// TestWhoTableJoined: a person's joined session shows as AWAKE/LIVE with
// its CLI.
func TestWhoTableJoined(t *testing.T) {
	rows := []AgentRow{{Agent: "ana", State: presence.AwakeLive,
		Status: &presence.Status{AgentID: "ana", State: presence.StateAwake, Substate: presence.SubLive, Joined: &presence.Joined{CLI: "codex"}}}}
	if got := WhoTable(rows, time.Now())[1][1]; got != "AWAKE/LIVE(codex)" {
		t.Errorf("state %q, want AWAKE/LIVE(codex)", got)
	}
}
