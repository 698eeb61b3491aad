package web

import (
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
)

// TestMCPMessageStatusScopedToTheTokensChannel: over HTTP, message_status
// with a token scoped to dev answers a message of ops as it answers one no
// channel holds: nothing of ops, not even that the message is there.
func TestMCPMessageStatusScopedToTheTokensChannel(t *testing.T) {
	m := newMCPTestServer(t, Config{})
	secret, _ := m.agentToken(t, "claude", "dev")
	cs, err := mcpConnect(t, m.ts.URL+"/mcp", secret)
	if err != nil {
		t.Fatal(err)
	}
	post := func(ch string) string {
		t.Helper()
		msg := channel.Message{SessionID: ch, From: "ann", To: "bob", Content: channel.Content{Text: "the " + ch + " plan"}}
		if err := (&channel.Writer{Root: m.root}).Post(&msg); err != nil {
			t.Fatal(err)
		}
		return msg.ID
	}
	dev, ops := post("dev"), post("ops")
	var st delivery.Status
	if e := mcpCall(t, cs, "message_status", map[string]any{"id": dev}, &st); e != "" || st.Channel != "dev" || st.From != "ann" {
		t.Fatalf("message_status of a message of the token's channel: %q %+v", e, st)
	}
	st = delivery.Status{}
	nowhere := channel.NewID("ann", time.Now(), "0000")
	got := mcpCall(t, cs, "message_status", map[string]any{"id": ops}, &st)
	want := strings.ReplaceAll(mcpCall(t, cs, "message_status", map[string]any{"id": nowhere}, nil), nowhere, ops)
	if got == "" || got != want {
		t.Errorf("message_status of a message of ops with a token of dev = %q, %+v; want %q, as for a message no channel holds", got, st, want)
	}
}
