package fakemodel

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reply is what the server answers to one model call: text, one tool
// call, or an HTTP error, optionally slow. The zero Reply is an empty text
// answer, which CLIs treat as an error or an empty result.
type Reply struct {
	Text string // the answer, streamed in word-sized chunks
	Call *Call  // a tool call instead of text, when set

	Status  int    // an HTTP error status (>= 400) instead of an answer
	Message string // the error's message, in the API's error body

	Delay time.Duration // wait before sending the response headers
	Pace  time.Duration // wait between streamed events
	// Hang, after the first chunk, stops the stream without ending it
	// (a reply that is not streamed never starts): the response stays
	// open until the client goes away or the server is closed. For
	// timeout and kill tests.
	Hang bool

	tool func(Request) (*Call, error) // chosen from the request's tools
	// then, when the call is a tool search, answers the next model call
	// (the one carrying the search's result), before anything queued.
	then *Reply
}

// Call is a tool call by the model.
type Call struct {
	Name string         // the tool, as the CLI named it in the request
	Args map[string]any // its arguments
	// Namespace is the group the tool was offered in (OpenAI Responses
	// "namespace" tools, as Codex offers MCP tools); "" for none.
	Namespace string
	// Search makes the call a search for deferred tools, Args its
	// arguments: an OpenAI Responses tool_search_call that the client
	// runs (Codex's tool_search).
	Search bool
}

// Text answers s.
func Text(s string) Reply { return Reply{Text: s} }

// Error answers with an HTTP error status and the API's own error body
// carrying message.
func Error(status int, message string) Reply { return Reply{Status: status, Message: message} }

// Tool answers with a call of the named tool.
func Tool(name string, args map[string]any) Reply {
	return Reply{Call: &Call{Name: name, Args: args}}
}

// Shell answers with a call of the CLI's shell tool running command:
// Claude Code's Bash, Codex's exec_command (or shell), Gemini CLI's
// run_shell_command, whichever the request offers. A request offering none
// is answered with a text that says so.
func Shell(command string) Reply {
	return Reply{tool: func(r Request) (*Call, error) {
		switch {
		case r.HasTool("Bash"):
			return &Call{Name: "Bash", Args: map[string]any{"command": command, "description": "Run " + command}}, nil
		case r.HasTool("exec_command"):
			return &Call{Name: "exec_command", Args: map[string]any{"cmd": command}}, nil
		case r.HasTool("shell"):
			return &Call{Name: "shell", Args: map[string]any{"command": []string{"bash", "-lc", command}}}, nil
		case r.HasTool("shell_command"):
			return &Call{Name: "shell_command", Args: map[string]any{"command": command}}, nil
		case r.HasTool("run_shell_command"):
			return &Call{Name: "run_shell_command", Args: map[string]any{"command": command, "description": "Run " + command}}, nil
		}
		return nil, fmt.Errorf("no shell tool among %v", r.Tools)
	}}
}

// ShellAsking is [Shell] for a command the CLI must ask a person about
// before it runs: Codex's call asks to run outside its sandbox
// (sandbox_permissions "require_escalated", which its approval policy
// "on-request" puts to the client); Claude Code and Gemini CLI ask for
// any shell command under the permission modes collab gives them.
func ShellAsking(command string) Reply {
	return Reply{tool: func(r Request) (*Call, error) {
		c, err := Shell(command).tool(r)
		if err == nil && c.Name == "exec_command" {
			c.Args["sandbox_permissions"] = "require_escalated"
			c.Args["justification"] = "the test asks for it"
		}
		return c, err
	}}
}

// ReadFile answers with a call of the CLI's file-reading tool on path:
// Claude Code's Read, Gemini CLI's read_file, or for Codex (which has no
// such tool) a shell "cat" of the file.
func ReadFile(path string) Reply {
	return Reply{tool: func(r Request) (*Call, error) {
		switch {
		case r.HasTool("Read"):
			return &Call{Name: "Read", Args: map[string]any{"file_path": path}}, nil
		case r.HasTool("read_file"):
			return &Call{Name: "read_file", Args: map[string]any{"file_path": path}}, nil
		}
		return Shell("cat '" + strings.ReplaceAll(path, "'", `'\''`) + "'").tool(r)
	}}
}

// MCPTool answers with a call of tool served by the MCP server named server,
// however the CLI offers it: Claude Code's "mcp__SERVER__TOOL", Codex's
// tool TOOL in namespace "mcp__SERVER", Gemini CLI's TOOL or
// "SERVER__TOOL". When Codex has deferred the server's tools behind its
// tool_search (it does for the models it knows), the reply is first a
// search for the tool, and the call answers the next model call, which
// carries the search's result. A request offering none is answered with a
// text that says so.
func MCPTool(server, tool string, args map[string]any) Reply {
	return mcpTool(server, tool, args, true)
}

func mcpTool(server, tool string, args map[string]any, search bool) Reply {
	r := Reply{tool: func(r Request) (*Call, error) {
		prefixed := "mcp__" + server + "__" + tool
		switch {
		case r.HasTool(prefixed):
			return &Call{Name: prefixed, Args: args}, nil
		case slices.Contains(r.Namespaces["mcp__"+server], tool):
			return &Call{Namespace: "mcp__" + server, Name: tool, Args: args}, nil
		case r.HasTool(server + "__" + tool):
			return &Call{Name: server + "__" + tool, Args: args}, nil
		case r.API == Gemini && r.HasTool(tool):
			return &Call{Name: tool, Args: args}, nil
		case search && r.API == OpenAI && r.HasTool("tool_search"):
			return &Call{Name: "tool_search", Search: true, Args: map[string]any{"query": tool, "limit": 8}}, nil
		}
		return nil, fmt.Errorf("no MCP tool %s of server %s among %v", tool, server, r.Tools)
	}}
	if search {
		then := mcpTool(server, tool, args, false)
		r.then = &then
	}
	return r
}

// After returns r sent only after d.
func (r Reply) After(d time.Duration) Reply { r.Delay = d; return r }

// Slowly returns r streamed with d between events.
func (r Reply) Slowly(d time.Duration) Reply { r.Pace = d; return r }

// Hung returns r that stops after its first chunk and never ends.
func (r Reply) Hung() Reply { r.Hang = true; return r }

// Echo is the default script. It answers a tool result with
// "tool said: " and the tool's output line (see [OutputLine]), and anything
// else with "echo: " and the first line of the request's Prompt, so a test
// can tell calls apart and see what each one was sent.
func Echo(r Request) Reply {
	if res, ok := r.ToolResult(); ok {
		return Text("tool said: " + OutputLine(res.Text))
	}
	return Text("echo: " + firstLine(r.Prompt()))
}

// resolve turns a deferred tool choice into a call, or a text naming the
// problem.
func (r Reply) resolve(req Request) Reply {
	if r.tool == nil {
		return r
	}
	call, err := r.tool(req)
	r.tool = nil
	if err != nil {
		r.Text, r.then = "fakemodel: "+err.Error(), nil
		return r
	}
	r.Call = call
	if !call.Search {
		r.then = nil
	}
	return r
}

// OutputLine returns the first line of what a tool printed, out of the
// wrapping each CLI puts around it: Codex's "Chunk ID: …\nOutput:\n…",
// Gemini CLI's "<untrusted_context>\nOutput: …", Claude Code's line
// numbers ("     1\t…") on a file read.
func OutputLine(result string) string {
	var lines []string
	for _, l := range strings.Split(result, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || isContextBlock(l) || (strings.HasPrefix(l, "<") && strings.HasSuffix(l, ">") && !strings.Contains(l, " ")) {
			continue // blank, or a lone <tag> or </tag>
		}
		lines = append(lines, l)
	}
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, "Output:"); ok {
			if rest = strings.TrimSpace(rest); rest != "" {
				return rest
			}
			if i+1 < len(lines) {
				return lines[i+1]
			}
			return ""
		}
	}
	if len(lines) == 0 {
		return ""
	}
	// A numbered line, as Claude Code's Read shows a file: "1\ttext" (cat -n).
	if num, text, ok := strings.Cut(lines[0], "\t"); ok && strings.Trim(num, "0123456789") == "" && num != "" {
		return text
	}
	return lines[0]
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// chunks splits text into word-sized pieces that concatenate to it.
func chunks(text string) []string {
	if text == "" {
		return nil
	}
	var out []string
	for len(text) > 0 {
		i := strings.IndexByte(text[1:], ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

func (c *Call) argsJSON() string {
	if c.Args == nil {
		return "{}"
	}
	b, err := json.Marshal(c.Args)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// tokens is the usage the server reports: about four bytes a token.
func tokens(n int) int { return max(1, n/4) }
