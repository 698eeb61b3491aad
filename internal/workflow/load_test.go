package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/watchconf"
)

// load writes src as w.yaml in a fresh folder (with prompts/reviewer.md
// and tmpl.txt) and parses it, naming the file "w.yaml" in positions.
func load(t *testing.T, src string) (*File, string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "prompts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"prompts/reviewer.md": "You review code.\n", "tmpl.txt": "{{.Text}}"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	abs := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(abs, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := parse("w.yaml", abs, []byte(src))
	return f, dir, err
}

// errLines is each joined error's text, one a line.
func errLines(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestLoadFull(t *testing.T) {
	src := `name: code-review
context:
  channel: review
  document: plan/notes.md
agents:
  reviewer:
    cli: claude            # a comment
    model: sonnet
    system_prompt: prompts/reviewer.md
    memory: [NOTES.md, /abs/M.md]
    workdir: .
    mcp: true
    budget_usd: 1.5
    budget_tokens: 100000
    max_turns: 3
    max_hops: -1
    rate: 4
    pair_rate: 2
    context: 0
    trust: signed
    timeout: 10m
    session_scope: thread
    session_ttl: 1h
    post_errors: false
    cli_args: ["--verbose", "a b"]
    prompt_template: tmpl.txt
  coder:
    cli: command
    cmd: ./fake --x
    role: |
      You fix code.
      Tests first.
  tester:
    cmd: echo hi
setup:
  - shell: git diff main
    as: diff
  - shell: echo hi
    timeout: 5s
kickoff: |
  ${{ diff }} ${{ env.USER }} ${{workflow.name}} ${{ workflow.instance }} ${{ context.channel }} ${{ context.document }}
  @reviewer please review these changes.
`
	f, dir, err := load(t, src)
	if err != nil {
		t.Fatal(err)
	}
	i := func(n int) *int { return &n }
	b := func(v bool) *bool { return &v }
	d := func(v time.Duration) *time.Duration { return &v }
	usd, tok := 1.5, int64(100000)
	want := &File{
		Name: "code-review", Path: filepath.Join(dir, "w.yaml"), Dir: dir,
		Context: Context{Channel: "review", Document: "plan/notes.md"},
		Agents: []Agent{{
			Name: "reviewer", Pos: Pos{"w.yaml", 6, 3}, CLI: "claude", Model: "sonnet",
			SystemPrompt: "You review code.\n", Memory: []string{filepath.Join(dir, "NOTES.md"), "/abs/M.md"},
			Workdir: dir, MCP: b(true), BudgetUSD: &usd, BudgetTokens: &tok, MaxTurns: i(3),
			MaxHops: i(-1), Rate: i(4), PairRate: i(2), Context: i(0), Trust: "signed",
			Timeout: d(10 * time.Minute), SessionScope: "thread", SessionTTL: d(time.Hour),
			PostErrors: b(false), CLIArgs: []string{"--verbose", "a b"}, PromptTemplate: filepath.Join(dir, "tmpl.txt"),
		}, {
			Name: "coder", Pos: Pos{"w.yaml", 27, 3}, CLI: "command", Cmd: "./fake --x", SystemPrompt: "You fix code.\nTests first.\n",
		}, {
			Name: "tester", Pos: Pos{"w.yaml", 33, 3}, Cmd: "echo hi",
		}},
		Setup: []Step{
			{Shell: "git diff main", As: "diff", Timeout: DefaultStepTimeout, Pos: Pos{"w.yaml", 36, 5}},
			{Shell: "echo hi", Timeout: 5 * time.Second, Pos: Pos{"w.yaml", 38, 5}},
		},
		Kickoff: "${{ diff }} ${{ env.USER }} ${{workflow.name}} ${{ workflow.instance }} ${{ context.channel }} ${{ context.document }}\n@reviewer please review these changes.\n",
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got  %+v\nwant %+v", f, want)
		for k := range f.Agents {
			t.Errorf("agent %d\ngot  %+v\nwant %+v", k, f.Agents[k], want.Agents[k])
		}
	}
	if got := f.Channel("pr-1"); got != "review" {
		t.Errorf("Channel = %q", got)
	}
	if got := f.Document(); got != "plan/notes.md" {
		t.Errorf("Document = %q", got)
	}
}

func TestLoadDefaults(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "my-flow.yml")
	if err := os.WriteFile(p, []byte("agents:\n  a:\n    cli: codex\n  b:\n    cli: gemini\nkickoff: \"@a go\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "my-flow" || f.Channel("x1") != "my-flow--x1" || f.Document() != "notes.md" || f.Kickoff != "@a go" {
		t.Errorf("got name %q channel %q document %q kickoff %q", f.Name, f.Channel("x1"), f.Document(), f.Kickoff)
	}
	if len(f.Agents) != 2 || f.Agents[0].Name != "a" || f.Agents[1].Name != "b" || f.Agents[0].MCP != nil || f.Agents[0].Timeout != nil {
		t.Errorf("agents %+v", f.Agents)
	}
	// Positions name the file as the caller gave it.
	if err := os.WriteFile(p, []byte("agents:\n  a:\n    cli: codex\nkickoff: hi\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(p)
	var we *Error
	if !errors.As(err, &we) || we.Pos != (Pos{p, 5, 1}) {
		t.Errorf("err %v, want an *Error at %s:5:1", err, p)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	const ok = "agents:\n  a:\n    cli: codex\nkickoff: go\n"
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "agents: [1\n", `w.yaml:1:9: sequence end token ']' not found`},
		{"tab indent", "agents:\n\ta: 1\n", "w.yaml:2:1: found character '\t' that cannot start any token"},
		{"duplicate key", "agents:\n  a: {cli: codex}\n  a: {cli: codex}\nkickoff: go\n", `w.yaml:3:3: mapping key "a" already defined at [2:3]`},
		{"empty", "# nothing\n", "w.yaml:1:1: empty workflow file: it needs agents:"},
		{"not a mapping", "- a\n", "w.yaml:1:1: the workflow file must be a mapping of keys to values, not a list"},
		{"unknown top key", ok + "agent: x\n", `w.yaml:5:1: unknown key "agent" in the workflow file (known: name, context, agents, setup, kickoff)`},
		{"unknown agent key", "agents:\n  a:\n    cli: codex\n    modle: x\nkickoff: go\n", `w.yaml:4:5: unknown key "modle" in agent "a" (known: ` + strings.Join(agentKeys, ", ") + ")"},
		{"unknown context key", ok + "context:\n  providers: file\n", `w.yaml:6:3: unknown key "providers" in context (known: channel, document, provider, config)`},
		{"unknown step key", ok + "setup:\n  - shell: x\n    run: y\n", `w.yaml:7:5: unknown key "run" in a setup step (known: shell, as, timeout)`},
		{"no agents", "kickoff: go\n", "w.yaml:1:1: no agents: the file needs agents: with at least one agent"},
		{"agents empty map", "agents: {}\nkickoff: go\n", "w.yaml:1:9: agents: needs at least one agent"},
		{"blank kickoff", "agents:\n  a: {cli: codex}\nkickoff: \"  \"\n", "w.yaml:3:10: kickoff: an empty message; leave kickoff: out to start without one"},
		{"bad workflow name", "name: a b\n" + ok, `w.yaml:1:7: name: tree: invalid name: workflow name "a b" has ' ' (U+0020) at byte 1; use only letters, digits, '_' and '-'`},
		{"workflow name --", "name: a--b\n" + ok, `w.yaml:1:7: name: tree: invalid name: workflow name "a--b" contains "--"`},
		{"agent name space", "agents:\n  re viewer: {cli: codex}\nkickoff: go\n", `w.yaml:2:3: agent "re viewer": tree: invalid name: agent name "re viewer" has ' ' (U+0020) at byte 2; use only letters, digits, '_' and '-'`},
		{"agent name --", "agents:\n  a--b: {cli: codex}\nkickoff: go\n", `w.yaml:2:3: agent "a--b": tree: invalid name: agent name "a--b" contains "--"`},
		{"agent name leading -", "agents:\n  -a: {cli: codex}\nkickoff: go\n", `w.yaml:2:3: agent "-a": tree: invalid name: agent name "-a" starts with '-'`},
		{"agent name trailing -", "agents:\n  a-: {cli: codex}\nkickoff: go\n", `w.yaml:2:3: agent "a-": tree: invalid name: agent name "a-" ends with '-'`},
		{"agent not a mapping", "agents:\n  a: codex\nkickoff: go\n", `w.yaml:2:6: agent "a" must be a mapping of keys to values, not a string`},
		{"bad cli", "agents:\n  a:\n    cli: gpt\nkickoff: go\n", `w.yaml:3:10: cli: "gpt" is not one of claude, codex, gemini, command`},
		{"command without cmd", "agents:\n  a:\n    cli: command\nkickoff: go\n", `w.yaml:2:3: agent "a": cli command needs cmd: (the command line to run), or choose cli: claude, codex or gemini`},
		{"default cli without cmd", "agents:\n  a:\nkickoff: go\n", `w.yaml:2:3: agent "a": no model: give model: anthropic/… (claude), openai/… (codex) or google/… (gemini), or cli: with cmd:`},
		{"missing prompt file", "agents:\n  a:\n    cli: codex\n    system_prompt: prompts/nope.md\nkickoff: go\n", `w.yaml:4:20: system_prompt: prompts/nope.md: no such file or directory`},
		{"prompt and role", "agents:\n  a:\n    cli: codex\n    system_prompt: hi\n    role: there\nkickoff: go\n", `w.yaml:5:5: agent "a": both system_prompt and role; give one`},
		{"missing template", "agents:\n  a:\n    cli: codex\n    prompt_template: t.tmpl\nkickoff: go\n", `w.yaml:4:22: prompt_template: t.tmpl: no such file or directory`},
		{"bad timeout", "agents:\n  a:\n    cli: codex\n    timeout: 10\nkickoff: go\n", `w.yaml:4:14: timeout: "10" is not a positive duration (like 30s, 5m or 1h30m)`},
		{"negative timeout", "agents:\n  a:\n    cli: codex\n    timeout: -1s\nkickoff: go\n", `w.yaml:4:14: timeout: "-1s" is not a positive duration (like 30s, 5m or 1h30m)`},
		{"bad step timeout", ok + "setup:\n  - shell: x\n    timeout: soon\n", `w.yaml:7:14: timeout: "soon" is not a positive duration (like 30s, 5m or 1h30m)`},
		{"bad int", "agents:\n  a:\n    cli: codex\n    rate: fast\nkickoff: go\n", `w.yaml:4:11: rate must be a whole number, not a string`},
		{"negative max_turns", "agents:\n  a:\n    cli: codex\n    max_turns: -2\nkickoff: go\n", `w.yaml:4:16: max_turns: -2 is less than 0`},
		{"live with a command", "agents:\n  a:\n    cli: command\n    cmd: x\n    live: true\nkickoff: go\n", `w.yaml:5:5: agent "a": live: true runs ` + strings.Join(watchconf.LiveCLIs, " or ") + `, not command`},
		{"live not a bool", "agents:\n  a:\n    cli: claude\n    live: maybe\nkickoff: go\n", `w.yaml:4:11: live must be true or false, not a string`},
		{"bad bool", "agents:\n  a:\n    cli: codex\n    mcp: yes please\nkickoff: go\n", `w.yaml:4:10: mcp must be true or false, not a string`},
		{"bad budget", "agents:\n  a:\n    cli: codex\n    budget_usd: -1\nkickoff: go\n", `w.yaml:4:17: budget_usd: -1 is not an amount`},
		{"bad trust", "agents:\n  a:\n    cli: codex\n    trust: all\nkickoff: go\n", `w.yaml:4:12: trust "all": use any, known or signed`},
		{"bad session scope", "agents:\n  a:\n    cli: codex\n    session_scope: forever\nkickoff: go\n", `w.yaml:4:20: session_scope: "forever" is not one of channel, thread, none`},
		{"bad channel", ok + "context:\n  channel: a/b\n", `w.yaml:6:12: context.channel: tree: invalid name: channel name "a/b" has '/' (U+002F) at byte 1; use only letters, digits, '_' and '-'`},
		{"bad document", ok + "context:\n  document: ../x.md\n", `w.yaml:6:13: context.document: documents: invalid document path: "../x.md" has ".."; paths may not climb`},
		{"duplicate as", ok + "setup:\n  - shell: a\n    as: x\n  - shell: b\n    as: x\n", `w.yaml:9:9: setup: as: "x" is already the output of the step at w.yaml:7:9`},
		{"bad as", ok + "setup:\n  - shell: a\n    as: my.var\n", `w.yaml:7:9: setup: as: "my.var" is not a variable name (a letter or '_', then letters, digits, '_' or '-')`},
		{"reserved as", ok + "setup:\n  - shell: a\n    as: env\n", `w.yaml:7:9: setup: as: "env" is reserved`},
		{"step without shell", ok + "setup:\n  - as: x\n", `w.yaml:6:5: setup: a step without shell:`},
		{"empty shell", ok + "setup:\n  - shell: \"\"\n", `w.yaml:6:12: setup: shell: an empty command`},
		{"setup not a list", ok + "setup: echo\n", `w.yaml:5:8: setup must be a list of steps (- shell: …), not a string`},
		{"unknown variable", "agents:\n  a: {cli: codex}\nkickoff: |\n  hello\n  @a see ${{ diff }}\n", `w.yaml:5:10: kickoff: unknown variable "diff": not a setup step's ` + "`as`" + `, env.NAME, workflow.name, workflow.instance, context.channel, context.document`},
		{"unknown variable second", "agents:\n  a: {cli: codex}\nkickoff: \"${{ x }} and ${{ x }}\"\n", "w.yaml:3:11: kickoff: unknown variable \"x\": not a setup step's `as`, env.NAME, workflow.name, workflow.instance, context.channel, context.document\nw.yaml:3:24: kickoff: unknown variable \"x\": not a setup step's `as`, env.NAME, workflow.name, workflow.instance, context.channel, context.document"},
		{"unknown reserved", "agents:\n  a: {cli: codex}\nkickoff: \"${{ workflow.id }}\"\n", "w.yaml:3:11: kickoff: unknown variable \"workflow.id\": not a setup step's `as`, env.NAME, workflow.name, workflow.instance, context.channel, context.document"},
		{"bad env name", "agents:\n  a: {cli: codex}\nkickoff: go ${{ env.A-B }}\n", `w.yaml:3:13: kickoff: "A-B" is not an environment variable's name`},
		{"bad syntax", "agents:\n  a: {cli: codex}\nkickoff: go ${{ a b }}\n", `w.yaml:3:13: kickoff: "${{ a b }}" is not a variable name (${{ NAME }}, ${{ env.NAME }}, ${{ workflow.name }} …)`},
		{"unclosed", "agents:\n  a: {cli: codex}\nkickoff: go ${{ a\n", `w.yaml:3:13: kickoff: "${{" without "}}"`},
		{"anchor", "agents:\n  a: &x {cli: codex}\n  b: *x\nkickoff: go\n", "w.yaml:2:6: anchors and aliases are not supported in a workflow file\nw.yaml:3:6: anchors and aliases are not supported in a workflow file"},
		{"tag", ok + "name: !!str x\n", "w.yaml:5:7: tags are not supported in a workflow file"},
		{"two documents", ok + "---\nname: x\n", "w.yaml:6:1: a second YAML document (document 2); a workflow file holds one"},
		{"several errors", "agents:\n  a:\n    cli: gpt\n    x: 1\n", "w.yaml:3:10: cli: \"gpt\" is not one of claude, codex, gemini, command\nw.yaml:4:5: unknown key \"x\" in agent \"a\" (known: " + strings.Join(agentKeys, ", ") + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, err := load(t, tt.src)
			if err == nil {
				t.Fatalf("no error; got %+v", f)
			}
			if tt.want == "" {
				t.Fatalf("FILL IN: %q", err.Error())
			}
			if got := errLines(err); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			var we *Error
			if !errors.As(err, &we) {
				t.Errorf("%T is not an *Error", err)
			}
		})
	}
}
