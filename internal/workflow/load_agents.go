package workflow

// A workflow file's agents.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/collabdev/collab/internal/agent/watchconf"
	"github.com/collabdev/collab/internal/identity/signing"
)

// agentKeys are the keys of an agent, in the order the error lists them.
var agentKeys = []string{"cli", "cmd", "cli_args", "model", "session_scope", "session_ttl",
	"budget_usd", "budget_tokens", "max_turns", "system_prompt", "role", "memory", "context",
	"prompt_template", "workdir", "timeout", "post_errors", "max_hops", "rate", "pair_rate",
	"trust", "mcp", "tools", "live"}

func (l *loader) agents(n ast.Node) []Agent {
	before := len(l.errs)
	m := l.mapping(n, "agents")
	if len(m) == 0 {
		if len(l.errs) == before {
			l.errorf(n, "agents: needs at least one agent")
		}
		return nil
	}
	out := make([]Agent, 0, len(m))
	for _, e := range m {
		a := Agent{Name: e.key, Pos: l.pos(e.at)}
		if err := CheckName("agent", e.key); err != nil {
			l.errorf(e.at, "agent %q: %v", e.key, err)
		}
		l.agent(e, &a)
		out = append(out, a)
	}
	return out
}

func (l *loader) agent(e kv, a *Agent) {
	where := fmt.Sprintf("agent %q", a.Name)
	var prompt, model, tools, live *kv
	cliBad := false
	m := l.mapping(orEmpty(e.value), where)
	if m == nil && e.value != nil && !isNull(e.value) {
		return // not a mapping: reported
	}
	for _, kv := range m {
		switch kv.key {
		case "cli":
			a.CLI = l.oneOf(kv, clis)
			cliBad = a.CLI == "" && !isNull(kv.value)
		case "cmd":
			a.Cmd, _ = l.str(kv)
		case "cli_args":
			a.CLIArgs = l.strs(kv)
		case "model":
			model = &kv
		case "session_scope":
			a.SessionScope = l.oneOf(kv, sessionScopes)
		case "session_ttl":
			a.SessionTTL = l.durationPtr(kv)
		case "budget_usd":
			a.BudgetUSD = l.money(kv)
		case "budget_tokens":
			if n, ok := l.integer(kv, 0); ok {
				a.BudgetTokens = &n
			}
		case "max_turns":
			a.MaxTurns = l.intPtr(kv, 0)
		case "system_prompt", "role":
			if prompt != nil {
				l.errorf(kv.at, "%s: both %s and %s; give one", where, prompt.key, kv.key)
				continue
			}
			prompt = &kv
			a.SystemPrompt = l.systemPrompt(kv)
		case "memory":
			for _, s := range l.strs(kv) {
				a.Memory = append(a.Memory, l.abs(s))
			}
		case "context":
			a.Context = l.intPtr(kv, 0)
		case "prompt_template":
			a.PromptTemplate = l.path(kv)
			if a.PromptTemplate != "" {
				if _, err := os.Stat(a.PromptTemplate); err != nil {
					l.errorf(kv.value, "prompt_template: %s: %v", kv.value.GetToken().Value, pathErr(err))
				}
			}
		case "workdir":
			a.Workdir = l.path(kv)
		case "timeout":
			a.Timeout = l.durationPtr(kv)
		case "post_errors":
			a.PostErrors = l.boolPtr(kv)
		case "max_hops":
			a.MaxHops = l.intPtr(kv, -1<<31)
		case "rate":
			a.Rate = l.intPtr(kv, -1<<31)
		case "pair_rate":
			a.PairRate = l.intPtr(kv, -1<<31)
		case "trust":
			if s, ok := l.str(kv); ok {
				if _, err := signing.ParsePolicy(s); err != nil {
					l.errorf(kv.value, "%v", err)
				}
				a.Trust = s
			}
		case "mcp":
			a.MCP = l.boolPtr(kv)
		case "tools":
			tools = &kv
		case "live":
			if a.Live = l.boolPtr(kv); a.Live != nil {
				live = &kv
			}
		default:
			l.unknown(kv, where, agentKeys...)
		}
	}
	cliSet := a.CLI != "" || cliBad
	if model != nil {
		l.model(*model, a, where, cliSet)
	}
	switch {
	case cliBad || !watchconf.NeedsCmd(a.CLI, a.Cmd):
	case a.CLI == "" && model != nil && !isNull(model.value):
		// model reported why it names no CLI
	case a.CLI == "":
		l.errorf(e.at, "%s: no model: give model: %s, or cli: with cmd:", where, providerChoices)
	case a.CLI == "" || a.CLI == "command":
		l.errorf(e.at, "%s: cli command needs cmd: (the command line to run), or choose cli: claude, codex or gemini", where)
	}
	if tools != nil {
		l.tools(*tools, a, where)
	}
	l.checkLive(live, a, where)
}

// checkLive refuses live: true for a CLI without a live mode.
func (l *loader) checkLive(live *kv, a *Agent, where string) {
	if live != nil && *a.Live && a.CLI != "" && !slices.Contains(watchconf.LiveCLIs, a.CLI) {
		l.errorf(live.at, "%s: live: true runs %s, not %s", where, strings.Join(watchconf.LiveCLIs, " or "), a.CLI)
	}
}

// orEmpty treats an agent without settings (`coder:`) as an empty mapping.
func orEmpty(n ast.Node) ast.Node {
	if n == nil || isNull(n) {
		return &ast.MappingNode{BaseNode: &ast.BaseNode{}}
	}
	return n
}

func (l *loader) money(e kv) *float64 {
	var f float64
	switch v := e.value.(type) {
	case nil, *ast.NullNode:
		return nil
	case *ast.FloatNode:
		f = v.Value
	case *ast.IntegerNode:
		var err error
		if f, err = strconv.ParseFloat(v.GetToken().Value, 64); err != nil {
			l.errorf(v, "%s: %v", e.key, err)
			return nil
		}
	default:
		l.errorf(e.value, "%s must be a number, not %s", e.key, kindOf(e.value))
		return nil
	}
	if f < 0 || f != f {
		l.errorf(e.value, "%s: %s is not an amount", e.key, e.value.GetToken().Value)
		return nil
	}
	return &f
}

// systemPrompt reads the value: a file name (one line without white space
// that has '/' or '.') is read, relative to the workflow's folder; other
// values are the text.
func (l *loader) systemPrompt(e kv) string {
	s, ok := l.str(e)
	if !ok || !isFileName(s) {
		return s
	}
	p := l.abs(s)
	fh, err := os.Open(p)
	if err != nil {
		l.errorf(e.value, "%s: %s: %v", e.key, s, pathErr(err))
		return ""
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxPromptSize+1))
	switch {
	case err != nil:
		l.errorf(e.value, "%s: read %s: %v", e.key, s, err)
		return ""
	case len(data) > MaxPromptSize:
		l.errorf(e.value, "%s: %s is larger than %d bytes", e.key, s, MaxPromptSize)
		return ""
	}
	return string(data)
}

// pathErr is err without its path, which the message names as written.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// isFileName reports whether a system_prompt value names a file.
func isFileName(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n") && strings.ContainsAny(s, "/.")
}
