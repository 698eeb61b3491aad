package join

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Claude Code (2.1.197) takes hooks for one run from --settings FILE, a
// layer on top of the person's own settings (which stay as they are, their
// hooks included):
//
//   - SessionStart and Stop run an asyncRewake hook: it runs in the
//     background and waits on the socket; exiting 2 with the batch on
//     standard error wakes the model, starting a turn when the session is
//     idle, or adding the batch after the running tool when it is busy.
//     Stop arms a new one after every turn; a newer one replaces the one
//     waiting (which exits 0, doing nothing).
//   - PostToolUse and UserPromptSubmit run a hook that takes what is
//     queued without waiting and returns it as additionalContext, for a
//     message that comes while the waiting hook has just fired.
//
// The batch's messages are read when the transcript holds them and then an
// "assistant" line. The MCP server is added with --mcp-config, next to the
// person's own, and its tools allowed (permissions.allow mcp__collab).

// Claude is Claude Code's way in.
type Claude struct {
	Bin  string   // default "claude"
	Args []string // the person's own arguments
	Env  []string // added to the environment
}

func (c *Claude) Name() string                    { return "claude" }
func (c *Claude) Serve(context.Context, *Session) {}
func (c *Claude) Model() []string                 { return []string{"assistant"} }

// Command writes the hooks' settings and returns the claude command.
func (c *Claude) Command(s *Session, sock string, mcp MCP) (*exec.Cmd, error) {
	hook := shellQuote(mcp.Exe) + " join-hook --cli claude"
	waiter := map[string]any{"type": "command", "command": hook, "asyncRewake": true, "timeout": 86400,
		"rewakeMessage": "[collab]", "rewakeSummary": "collab: new message"}
	taker := map[string]any{"type": "command", "command": hook, "timeout": 30}
	settings := map[string]any{
		// The collab tools act as the person's agent, which they chose to
		// join as: they run without asking (the person's own deny rules
		// still win).
		"permissions": map[string]any{"allow": []string{"mcp__collab"}},
		"hooks": map[string]any{
			"SessionStart":     []any{map[string]any{"hooks": []any{waiter}}},
			"Stop":             []any{map[string]any{"hooks": []any{waiter}}},
			"PostToolUse":      []any{map[string]any{"matcher": "*", "hooks": []any{taker}}},
			"UserPromptSubmit": []any{map[string]any{"hooks": []any{taker}}},
		}}
	path := filepath.Join(s.cfg.Dir, "claude-settings.json")
	if err := writeJSON(path, settings); err != nil {
		return nil, err
	}
	server, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"collab": map[string]any{
		"type": "stdio", "command": mcp.Exe, "args": mcp.Args}}})
	if err != nil {
		return nil, err
	}
	bin := c.Bin
	if bin == "" {
		bin = "claude"
	}
	args := append([]string{"--settings", path, "--mcp-config", string(server)}, c.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	return cmd, nil
}

// writeJSON writes v to path, for this user only.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	return nil
}

// shellQuote quotes s as one word for sh (a hook's command is run by a
// shell): the path of the collab binary, not anything a message holds.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
