package watchconf_test

import (
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/watchconf"
	"github.com/collabdev/collab/internal/errkind"
)

func TestCheck(t *testing.T) {
	ok := watchconf.Settings{Agent: "bob", Channels: []string{"dev"}, Cmd: "true", Poll: time.Second, Heartbeat: time.Second}
	tests := []struct {
		name string
		edit func(*watchconf.Settings)
		want string // "" valid
	}{
		{"valid", func(*watchconf.Settings) {}, ""},
		{"no agent", func(s *watchconf.Settings) { s.Agent = "" }, "use --agent or set COLLAB_AGENT"},
		{"no channel", func(s *watchconf.Settings) { s.Channels = nil }, "no channel: use --channel or COLLAB_CHANNEL"},
		{"bad channel", func(s *watchconf.Settings) { s.Channels = []string{"../x"} }, "channel"},
		{"scope", func(s *watchconf.Settings) { s.SessionScope = "day" }, `--session-scope "day": use channel, thread or none`},
		{"scope thread", func(s *watchconf.Settings) { s.SessionScope = watchconf.ScopeThread }, ""},
		{"budget", func(s *watchconf.Settings) { s.BudgetUSD = -1 }, "--budget-usd must not be negative"},
		{"tokens", func(s *watchconf.Settings) { s.BudgetTokens = -1 }, "--budget-tokens must not be negative"},
		{"turns", func(s *watchconf.Settings) { s.MaxTurns = -1 }, "--max-turns must not be negative"},
		{"poll", func(s *watchconf.Settings) { s.Poll = time.Millisecond }, "--poll 1ms: the minimum is 10ms"},
		{"heartbeat unset", func(s *watchconf.Settings) { s.Heartbeat = 0 }, "--heartbeat 0s: the minimum is 1s"},
		{"trust", func(s *watchconf.Settings) { s.Trust = "all" }, "--trust:"},
		{"log level", func(s *watchconf.Settings) { s.LogLevel = "loud" }, `--log-level "loud": use debug, info, warn or error`},
		{"unknown cli", func(s *watchconf.Settings) { s.CLI = "llama" }, `unknown --cli "llama"`},
		{"command without cmd", func(s *watchconf.Settings) { s.Cmd = "  " }, "--cli command needs --cmd"},
		{"model on command", func(s *watchconf.Settings) { s.Model = "m" }, "--model needs a dedicated --cli"},
		{"model on claude", func(s *watchconf.Settings) { s.CLI, s.Cmd, s.Model = "claude", "", "m" }, ""},
		{"mcp on command", func(s *watchconf.Settings) { s.MCP = true }, "--mcp needs --cli claude or codex, not command"},
		{"mcp on gemini", func(s *watchconf.Settings) { s.CLI, s.MCP = "gemini", true }, "--mcp needs --cli claude or codex, not gemini"},
		{"mcp on codex", func(s *watchconf.Settings) { s.CLI, s.MCP = "codex", true }, ""},
		{"live on claude", func(s *watchconf.Settings) { s.CLI, s.Cmd, s.Live = "claude", "", true }, ""},
		{"live on codex", func(s *watchconf.Settings) { s.CLI, s.Cmd, s.Live = "codex", "", true }, ""},
		{"live on gemini", func(s *watchconf.Settings) { s.CLI, s.Live = "gemini", true }, ""},
		{"live on command", func(s *watchconf.Settings) { s.Live = true }, "--live needs --cli claude, codex or gemini, not command"},
		{"live without scope", func(s *watchconf.Settings) { s.CLI, s.Live, s.SessionScope = "claude", true, watchconf.ScopeNone }, "--live needs --session-scope channel or thread"},
		{"live idle", func(s *watchconf.Settings) { s.LiveIdle = -time.Second }, "--live-idle must not be negative"},
		{"live max", func(s *watchconf.Settings) { s.LiveMax = -1 }, "--live-max must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.edit(&s)
			err := s.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check() = %v, want nil", err)
			case tt.want == "":
			case err == nil:
				t.Fatalf("Check() = nil, want %q", tt.want)
			case !strings.Contains(err.Error(), tt.want):
				t.Errorf("Check() = %v, want %q", err, tt.want)
			case errkind.Of(err) != errkind.Invalid:
				t.Errorf("Check()'s kind is %v, want invalid", errkind.Of(err))
			}
		})
	}
}

func TestNeedsCmd(t *testing.T) {
	for _, c := range []struct {
		cli, cmd string
		want     bool
	}{{"", "", true}, {"command", " ", true}, {"command", "x", false}, {"claude", "", false}} {
		if got := watchconf.NeedsCmd(c.cli, c.cmd); got != c.want {
			t.Errorf("NeedsCmd(%q, %q) = %v, want %v", c.cli, c.cmd, got, c.want)
		}
	}
}
