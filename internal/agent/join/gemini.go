package join

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// Gemini CLI (0.61) reads a system defaults file, its lowest settings
// layer, from $GEMINI_CLI_SYSTEM_DEFAULTS_PATH, merged under the person's
// own settings (hook lists are concatenated, so theirs still run). It
// skips the file, saying so, when any folder above it is writable by
// others: the session's private folder must not be under /tmp. The file
// carries the MCP server (trusted: its tools run without asking) and
// synchronous hooks that take what is queued:
//
//   - SessionStart and BeforeAgent: additionalContext for the prompt
//     (what waited while no session was open, and what came while the
//     session was idle: Gemini CLI has no way to wake an idle session, so
//     that waits for the person's next prompt);
//   - AfterTool: additionalContext after a tool's result (busy);
//   - AfterAgent: a turn that is ending is continued with the batch as its
//     next prompt ("decision": "block"), which Gemini CLI shows as
//     "Agent execution blocked: …".
//
// A machine's own system defaults (/etc/gemini-cli/system-defaults.json,
// which the variable replaces) are kept: they are read and ours merged in.
// Read: the transcript holds the batch, then a "gemini" line.

// Gemini is Gemini CLI's way in.
type Gemini struct {
	Bin  string   // default "gemini"
	Args []string // the person's own arguments
	Env  []string // added to the environment
	// SystemDefaults is the machine's defaults file to merge ours into;
	// default /etc/gemini-cli/system-defaults.json.
	SystemDefaults string
}

func (g *Gemini) Name() string                    { return "gemini" }
func (g *Gemini) Serve(context.Context, *Session) {}
func (g *Gemini) Model() []string                 { return []string{"gemini"} }

// Command writes the defaults file and returns the gemini command.
func (g *Gemini) Command(s *Session, sock string, mcp MCP) (*exec.Cmd, error) {
	defaults := map[string]any{}
	machine := g.SystemDefaults
	if machine == "" {
		machine = "/etc/gemini-cli/system-defaults.json"
	}
	if data, err := os.ReadFile(machine); err == nil {
		if err := json.Unmarshal(data, &defaults); err != nil {
			return nil, fmt.Errorf("join: %s: %w", machine, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("join: %w", err)
	}
	hook := shellQuote(mcp.Exe) + " join-hook --cli gemini"
	ours := map[string]any{"name": "collab", "type": "command", "command": hook, "timeout": 30000}
	hooks, _ := defaults["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	for _, ev := range []string{"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent"} {
		def := map[string]any{"hooks": []any{ours}}
		if ev == "AfterTool" {
			def["matcher"] = ".*"
		}
		list, _ := hooks[ev].([]any)
		hooks[ev] = append(list, def)
	}
	defaults["hooks"] = hooks
	servers, _ := defaults["mcpServers"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	servers["collab"] = map[string]any{"command": mcp.Exe, "args": mcp.Args, "trust": true}
	defaults["mcpServers"] = servers
	path := filepath.Join(s.cfg.Dir, "gemini-defaults.json")
	if err := writeJSON(path, defaults); err != nil {
		return nil, err
	}
	bin := g.Bin
	if bin == "" {
		bin = "gemini"
	}
	cmd := exec.Command(bin, g.Args...)
	cmd.Env = append(append(os.Environ(), g.Env...), "GEMINI_CLI_SYSTEM_DEFAULTS_PATH="+path)
	return cmd, nil
}
