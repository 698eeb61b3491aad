package workflow

// An agent's model (provider/name: the CLI it runs) and tools: what
// each CLI can restrict of them.

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/goccy/go-yaml/ast"

	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
)

// Providers maps the provider of a model (PROVIDER/NAME) to the CLI
// that runs it.
var Providers = map[string]string{"anthropic": "claude", "openai": "codex", "google": "gemini"}

// providerChoices names the providers in errors.
const providerChoices = "anthropic/… (claude), openai/… (codex) or google/… (gemini)"

// model reads model: PROVIDER/NAME sets the CLI (when cli: does not) and
// leaves NAME for the CLI's --model; a model without a provider needs
// cli:.
func (l *loader) model(e kv, a *Agent, where string, cliSet bool) {
	s, ok := l.str(e)
	if !ok {
		return
	}
	prov, name, found := strings.Cut(s, "/")
	cli, known := Providers[prov]
	switch {
	case found && known && (!cliSet || a.CLI == cli):
		if name == "" {
			l.errorf(e.value, "%s: model %q names no model after %q", where, s, prov+"/")
			return
		}
		a.CLI, a.Model = cli, name
	case found && known:
		l.errorf(e.value, "%s: model %q is run by %s, not cli: %s", where, s, cli, a.CLI)
	case cliSet:
		a.Model = s // the CLI's own name for it, as cli: says
	case found:
		l.errorf(e.value, "%s: model %q: unknown provider %q; use %s, or give cli:", where, s, prov, providerChoices)
	default:
		l.errorf(e.value, "%s: model %q names no provider; write %s, or give cli:", where, s, providerChoices)
	}
}

// tools checks the agent's tools and sets ToolArgs for its CLI, with a
// warning of what that CLI cannot restrict.
func (l *loader) tools(e kv, a *Agent, where string) {
	if e.value == nil || isNull(e.value) {
		return
	}
	if _, ok := e.value.(*ast.SequenceNode); !ok {
		l.errorf(e.value, "%s: tools must be a list of tool names, not %s", where, kindOf(e.value))
		return
	}
	for _, t := range l.strs(e) {
		if msg := checkTool(t); msg != "" {
			l.errorf(e.value, "%s: tools: %q %s", where, t, msg)
			return
		}
		a.Tools = append(a.Tools, t)
	}
	if len(a.Tools) == 0 {
		return
	}
	var limits string
	switch a.CLI {
	case "claude":
		a.ToolArgs, limits = claude.ToolArgs(a.Tools), claude.ToolLimits
	case "codex":
		a.ToolArgs, limits = codex.ToolArgs(a.Tools), codex.ToolLimits
	case "gemini":
		a.ToolArgs, limits = gemini.ToolArgs(a.Tools), gemini.ToolLimits
	default:
		limits = "a command CLI (cli: command) has no tools collab can restrict, so tools: is not applied"
	}
	l.warnf(e.at, "%s: tools: %s", where, limits)
}

// checkTool reports what is wrong with a tool's name or rule ("" when
// nothing): it is one argument of the CLI, so never an option.
func checkTool(t string) string {
	switch {
	case strings.TrimSpace(t) == "":
		return "is empty"
	case strings.HasPrefix(t, "-"):
		return "starts with '-'"
	case len(t) > 256:
		return "is longer than 256 bytes"
	case strings.IndexFunc(t, unicode.IsControl) >= 0:
		return "holds a control character"
	}
	return ""
}

// warnf records a warning at n.
func (l *loader) warnf(n ast.Node, format string, args ...any) {
	l.warns = append(l.warns, l.pos(n).String()+": "+fmt.Sprintf(format, args...))
}
