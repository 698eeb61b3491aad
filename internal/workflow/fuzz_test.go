package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"agents:\n  a: {cli: codex}\nkickoff: go\n",
		"name: x\ncontext:\n  channel: c\nagents:\n  a:\n    cmd: echo\n    memory: [a, b]\n    rate: -1\n    budget_usd: 0.5\nsetup:\n  - shell: echo\n    as: o\nkickoff: |\n  ${{ o }} ${{ env.X }}\n",
		"a: &x [1]\nb: *x\n", "- a\n", "{", "agents:\n\ta", "---\n---\n", "kickoff: \"${{\"\n", "<<: {a: 1}\n",
		"agents: {a: {system_prompt: p.md}}\nkickoff: ${{ a b }}\n",
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
		if len(wf.Agents) == 0 || wf.Kickoff == "" || CheckName("workflow", wf.Name) != nil {
			t.Errorf("accepted an incomplete file: %+v", wf)
		}
		for _, a := range wf.Agents {
			if _, err := AgentID(a.Name, "i"); err != nil {
				t.Errorf("accepted agent name %q: %v", a.Name, err)
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
