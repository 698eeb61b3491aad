package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"agents:\n  a: {cli: codex}\nkickoff: go\n",
		"name: x\ncontext:\n  channel: c\nagents:\n  a:\n    cmd: echo\n    memory: [a, b]\n    rate: -1\n    budget_usd: 0.5\nsetup:\n  - shell: echo\n    as: o\nkickoff: |\n  ${{ o }} ${{ env.X }}\n",
		"a: &x [1]\nb: *x\n", "- a\n", "{", "agents:\n\ta", "---\n---\n", "kickoff: \"${{\"\n", "<<: {a: 1}\n",
		"agents: {a: {system_prompt: p.md}}\nkickoff: ${{ a b }}\n",
		// Seed 000's format.
		"name: review\ncontext:\nagents:\n  reviewer:\n    model: anthropic/claude-sonnet-4-5\n    system_prompt: |\n      You review.\n    tools: [Read, \"Bash(git diff:*)\"]\n",
		"context: false\nagents:\n  a: {model: openai/gpt-5, tools: [shell]}\nkickoff: \"@a go\"\n",
		"context:\n  provider: file\n  config:\n    dir: .workflow/${{ instance }}/\n    channel: discussion.md\n    document: workspace.md\n    documents: [goals.md, todos.md]\nagents:\n  a: {model: google/gemini-2.5-pro}\n",
		"context:\n  provider: memory\nagents:\n  a: {model: mistral/x}\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	abs := filepath.Join(dir, "w.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		wf, err := parse("w.yaml", abs, data)
		if err != nil {
			var we *Error
			if !errors.As(err, &we) || we.Pos.Line < 1 || we.Pos.Col < 1 {
				t.Errorf("error without a position: %v", err)
			}
			return
		}
		if len(wf.Agents) == 0 || CheckName("workflow", wf.Name) != nil {
			t.Errorf("accepted an incomplete file: %+v", wf)
		}
		if ch := wf.Channel("i"); tree.CheckName("channel", ch) != nil && len(ch) <= tree.MaxNameLen {
			t.Errorf("accepted a context that names channel %q", ch)
		}
		if wf.Context.Off && wf.Document() != "" {
			t.Errorf("context: false with document %q", wf.Document())
		}
		for _, a := range wf.Agents {
			if _, err := AgentID(a.Name, "i"); err != nil {
				t.Errorf("accepted agent name %q: %v", a.Name, err)
			}
			if a.CLI != "" && !slices.Contains(clis, a.CLI) {
				t.Errorf("agent %q: cli %q", a.Name, a.CLI)
			}
			for _, tool := range a.Tools {
				if strings.HasPrefix(tool, "-") || strings.TrimSpace(tool) == "" {
					t.Errorf("agent %q: accepted tool %q", a.Name, tool)
				}
			}
		}
	})
}

// The fuzz seed folder must not be written to by Load.
func TestLoadReadsOnly(t *testing.T) {
	f, dir, err := load(t, "agents:\n  a: {cli: codex, workdir: sub, memory: M.md}\nkickoff: go\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load made the workdir: %v", err)
	}
	if f.Agents[0].Workdir != filepath.Join(dir, "sub") || f.Agents[0].Memory[0] != filepath.Join(dir, "M.md") {
		t.Errorf("paths %+v", f.Agents[0])
	}
}
