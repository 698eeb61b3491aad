package modelcli

import (
	"fmt"
	"regexp"
)

// MCPServer is a stdio MCP server that a CLI adapter gives the model CLI
// for every run (the claude and codex adapters' MCPServers): the CLI starts
// Command with Args, speaks MCP on its standard input and output, and
// offers the server's tools to the model, allowed to run without asking.
// The watcher's --mcp gives it `collab mcp` this way.
type MCPServer struct {
	// Name names the server to the CLI; the model sees its tools as
	// mcp__NAME__TOOL (Claude Code) or in namespace mcp__NAME (Codex).
	Name    string
	Command string   // program, best an absolute path
	Args    []string // each exactly one argument
	// EnvVars names variables of the CLI's own environment (which holds
	// the inherited one and Request.Env) that the server needs. Claude
	// Code gives its servers its whole environment anyway; Codex gives
	// them only a few basic variables and these.
	EnvVars []string
}

var (
	mcpName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Check reports what is wrong with s, if anything.
func (s MCPServer) Check() error {
	if !mcpName.MatchString(s.Name) {
		return fmt.Errorf("mcp server name %q: use 1-64 of A-Z a-z 0-9 _ -", s.Name)
	}
	if s.Command == "" {
		return fmt.Errorf("mcp server %s: no command", s.Name)
	}
	for _, v := range s.EnvVars {
		if !envName.MatchString(v) {
			return fmt.Errorf("mcp server %s: %q is not a variable name", s.Name, v)
		}
	}
	return nil
}
