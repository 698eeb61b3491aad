package workflow

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestLoadSeedFormat: seed 000's format loads: a model's provider names
// its CLI, context: false, the providers and their config, tools, and a
// file without a kickoff.
func TestLoadSeedFormat(t *testing.T) {
	const kick = "kickoff: \"@a go\"\n"
	tests := []struct {
		name, src string
		check     func(t *testing.T, f *File)
	}{
		{"anthropic model", "agents:\n  a:\n    model: anthropic/claude-sonnet-4-5\n    system_prompt: hi\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; a.CLI != "claude" || a.Model != "claude-sonnet-4-5" || a.SystemPrompt != "hi" {
				t.Errorf("agent %+v", a)
			}
		}},
		{"openai model", "agents:\n  a:\n    model: openai/gpt-5-codex\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; a.CLI != "codex" || a.Model != "gpt-5-codex" {
				t.Errorf("agent %+v", a)
			}
		}},
		{"google model", "agents:\n  a:\n    model: google/gemini-2.5-flash\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; a.CLI != "gemini" || a.Model != "gemini-2.5-flash" {
				t.Errorf("agent %+v", a)
			}
		}},
		{"cli and its provider", "agents:\n  a:\n    model: anthropic/opus\n    cli: claude\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; a.CLI != "claude" || a.Model != "opus" {
				t.Errorf("agent %+v", a)
			}
		}},
		{"cli and another provider's name kept", "agents:\n  a:\n    cli: codex\n    model: meta/llama\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; a.CLI != "codex" || a.Model != "meta/llama" {
				t.Errorf("agent %+v", a)
			}
		}},
		{"cmd names the program", "agents:\n  a:\n    model: anthropic/x\n    cmd: ./fake-claude\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; a.CLI != "claude" || a.Cmd != "./fake-claude" {
				t.Errorf("agent %+v", a)
			}
		}},
		{"no kickoff", "agents:\n  a:\n    model: anthropic/x\n", func(t *testing.T, f *File) {
			if f.Kickoff != "" {
				t.Errorf("kickoff %q", f.Kickoff)
			}
		}},
		{"null kickoff", "agents:\n  a:\n    model: anthropic/x\nkickoff:\n", func(t *testing.T, f *File) {
			if f.Kickoff != "" {
				t.Errorf("kickoff %q", f.Kickoff)
			}
		}},
		{"context null", "context:\nagents:\n  a: {model: anthropic/x}\n" + kick, func(t *testing.T, f *File) {
			if f.Context.Off || f.Context.Memory() || f.Channel("i1") != "w--i1" || f.Document() != "notes.md" {
				t.Errorf("context %+v", f.Context)
			}
		}},
		{"context false", "context: false\nagents:\n  a: {model: anthropic/x}\n  b: {model: anthropic/x, context: 0}\n" + kick, func(t *testing.T, f *File) {
			if !f.Context.Off || f.Document() != "" || f.Channel("i1") != "w--i1" {
				t.Errorf("context %+v document %q", f.Context, f.Document())
			}
			for _, a := range f.Agents {
				if a.Context == nil || *a.Context != 0 {
					t.Errorf("agent %s context %v, want 0", a.Name, a.Context)
				}
			}
		}},
		{"file provider", "context:\n  provider: file\nagents:\n  a: {model: anthropic/x}\n" + kick, func(t *testing.T, f *File) {
			if f.Context.Provider != ProviderFile || f.Context.Memory() || f.Channel("i1") != "w--i1" {
				t.Errorf("context %+v", f.Context)
			}
		}},
		{"memory provider", "context:\n  provider: memory\nagents:\n  a: {model: anthropic/x}\n" + kick, func(t *testing.T, f *File) {
			if !f.Context.Memory() || f.Channel("i1") != "w--i1" || f.Document() != "notes.md" {
				t.Errorf("context %+v", f.Context)
			}
		}},
		{"file config", "context:\n  provider: file\n  config:\n    dir: ./my-context/\n    channel: discussion.md\n    document: workspace.md\nagents:\n  a: {model: anthropic/x}\n" + kick, func(t *testing.T, f *File) {
			if got := f.Channel("i1"); got != "my-context-discussion" || f.Document() != "workspace.md" {
				t.Errorf("channel %q document %q", got, f.Document())
			}
		}},
		{"default dir and channel", "context:\n  provider: file\n  config:\n    dir: .workflow/${{ instance }}/\n    channel: channel.md\n    document: workspace.md\n    documents:\n      - goals.md\n      - findings/auth.md\nagents:\n  a: {model: anthropic/x}\n" + kick, func(t *testing.T, f *File) {
			if got := f.Channel("i1"); got != "w--i1" || f.Document() != "workspace.md" || !slices.Equal(f.Context.Documents, []string{"goals.md", "findings/auth.md"}) {
				t.Errorf("channel %q context %+v", got, f.Context)
			}
		}},
		{"dir per instance", "context:\n  config:\n    dir: runs/${{ workflow.name }}-${{instance}}\nagents:\n  a: {model: anthropic/x}\n" + kick, func(t *testing.T, f *File) {
			if got := f.Channel("pr-7"); got != "w-pr-7" {
				t.Errorf("channel %q", got)
			}
		}},
		{"channel file only", "context:\n  config:\n    channel: talk.md\nagents:\n  a: {model: anthropic/x}\n" + kick, func(t *testing.T, f *File) {
			if got := f.Channel("i1"); got != "talk" {
				t.Errorf("channel %q", got)
			}
		}},
		{"claude tools", "agents:\n  a:\n    model: anthropic/x\n    tools: [Read, \"Bash(git diff:*)\"]\n" + kick, func(t *testing.T, f *File) {
			a := f.Agents[0]
			if !slices.Equal(a.Tools, []string{"Read", "Bash(git diff:*)"}) || !slices.Equal(a.ToolArgs[:3], []string{"--allowedTools", "Read", "Bash(git diff:*)"}) || a.ToolArgs[3] != "--disallowedTools" {
				t.Fatalf("tools %q args %q", a.Tools, a.ToolArgs)
			}
			for _, denied := range []string{"Edit", "Write", "WebFetch"} {
				if !slices.Contains(a.ToolArgs[4:], denied) {
					t.Errorf("%s not denied: %q", denied, a.ToolArgs)
				}
			}
			for _, kept := range []string{"Read", "Bash"} {
				if slices.Contains(a.ToolArgs[4:], kept) {
					t.Errorf("%s denied: %q", kept, a.ToolArgs)
				}
			}
			if len(f.Warnings) != 1 || !strings.HasPrefix(f.Warnings[0], "w.yaml:4:5: agent \"a\": tools: --allowedTools only adds") {
				t.Errorf("warnings %q", f.Warnings)
			}
		}},
		{"codex tools", "agents:\n  a:\n    model: openai/gpt-5\n    tools: [shell]\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; a.ToolArgs != nil || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "codex exec has no flag") {
				t.Errorf("args %q warnings %q", a.ToolArgs, f.Warnings)
			}
		}},
		{"gemini tools", "agents:\n  a:\n    model: google/gemini-2.5-pro\n    tools: [read_file, run_shell_command]\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; !slices.Equal(a.ToolArgs, []string{"--allowed-tools", "read_file", "run_shell_command"}) || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "Gemini CLI has no flag") {
				t.Errorf("args %q warnings %q", a.ToolArgs, f.Warnings)
			}
		}},
		{"command tools", "agents:\n  a:\n    cmd: cat\n    tools: [Read]\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; a.ToolArgs != nil || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "cli: command") {
				t.Errorf("args %q warnings %q", a.ToolArgs, f.Warnings)
			}
		}},
		{"no tools no warning", "agents:\n  a:\n    model: anthropic/x\n    tools: []\n" + kick, func(t *testing.T, f *File) {
			if a := f.Agents[0]; a.ToolArgs != nil || f.Warnings != nil {
				t.Errorf("args %q warnings %q", a.ToolArgs, f.Warnings)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, err := load(t, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, f)
		})
	}
}

// TestLoadSeedErrors: what the seed's keys refuse, at their place.
func TestLoadSeedErrors(t *testing.T) {
	const kick = "kickoff: go\n"
	tests := []struct{ name, src, want string }{
		{"unknown provider", "agents:\n  a:\n    model: mistral/large\n" + kick, `w.yaml:3:12: agent "a": model "mistral/large": unknown provider "mistral"; use anthropic/… (claude), openai/… (codex) or google/… (gemini), or give cli:`},
		{"no provider", "agents:\n  a:\n    model: sonnet\n" + kick, `w.yaml:3:12: agent "a": model "sonnet" names no provider; write anthropic/… (claude), openai/… (codex) or google/… (gemini), or give cli:`},
		{"no model name", "agents:\n  a:\n    model: anthropic/\n" + kick, `w.yaml:3:12: agent "a": model "anthropic/" names no model after "anthropic/"`},
		{"provider not the cli's", "agents:\n  a:\n    cli: codex\n    model: anthropic/x\n" + kick, `w.yaml:4:12: agent "a": model "anthropic/x" is run by claude, not cli: codex`},
		{"provider not the command's", "agents:\n  a:\n    cli: command\n    cmd: cat\n    model: google/x\n" + kick, `w.yaml:5:12: agent "a": model "google/x" is run by gemini, not cli: command`},
		{"prompt only", "agents:\n  a:\n    system_prompt: hi\n" + kick, `w.yaml:2:3: agent "a": no model: give model: anthropic/… (claude), openai/… (codex) or google/… (gemini), or cli: with cmd:`},
		{"bad provider", "context:\n  provider: disk\nagents:\n  a: {model: anthropic/x}\n" + kick, `w.yaml:2:13: provider: "disk" is not one of file, memory`},
		{"context true is fine but a string is not", "context: files\nagents:\n  a: {model: anthropic/x}\n" + kick, `w.yaml:1:10: context must be a mapping of keys to values, not a string`},
		{"memory with dir", "context:\n  provider: memory\n  config:\n    dir: x\nagents:\n  a: {model: anthropic/x}\n" + kick, `w.yaml:4:5: context.config.dir: a memory provider has no folder; leave dir out`},
		{"dir variable", "context:\n  config:\n    dir: runs/${{ diff }}\nagents:\n  a: {model: anthropic/x}\n" + kick, `w.yaml:3:10: context.config.dir: ${{ diff }} is not one of ${{ instance }}, ${{ workflow.instance }}, ${{ workflow.name }}`},
		{"dir name", "context:\n  config:\n    dir: \"runs/a b\"\nagents:\n  a: {model: anthropic/x}\n" + kick, `w.yaml:3:10: context.config.dir: its last element "a b" does not make a channel name (letters, digits, '.', '_', '-')`},
		{"channel path", "context:\n  config:\n    channel: a/b.md\nagents:\n  a: {model: anthropic/x}\n" + kick, `w.yaml:3:14: context.config.channel: a file name, not a path (the folder is dir:)`},
		{"bad documents", "context:\n  config:\n    documents: [ok.md, ../up.md]\nagents:\n  a: {model: anthropic/x}\n" + kick, `w.yaml:3:16: context.config.documents: documents: invalid document path: "../up.md" has ".."; paths may not climb`},
		{"two channel names", "context:\n  channel: c1\n  config:\n    channel: c2.md\nagents:\n  a: {model: anthropic/x}\n" + kick, `w.yaml:3:3: context: both channel: and config's dir/channel name the channel; give one`},
		{"unknown config key", "context:\n  config:\n    folder: x\nagents:\n  a: {model: anthropic/x}\n" + kick, `w.yaml:3:5: unknown key "folder" in context.config (known: dir, channel, document, documents)`},
		{"tools not a list", "agents:\n  a:\n    model: anthropic/x\n    tools: Read\n" + kick, `w.yaml:4:12: agent "a": tools must be a list of tool names, not a string`},
		{"tool option", "agents:\n  a:\n    model: anthropic/x\n    tools: [--dangerously-skip-permissions]\n" + kick, `w.yaml:4:12: agent "a": tools: "--dangerously-skip-permissions" starts with '-'`},
		{"tool empty", "agents:\n  a:\n    model: anthropic/x\n    tools: [\" \"]\n" + kick, `w.yaml:4:12: agent "a": tools: " " is empty`},
		{"context false and a count", "context: false\nagents:\n  a: {model: anthropic/x, context: 5}\n" + kick, `w.yaml:3:3: agent "a": context: 5, but the file has context: false (no shared context)`},
		{"context false and the document", "context: false\nagents:\n  a: {model: anthropic/x}\nkickoff: see ${{ context.document }}\n", `w.yaml:4:14: kickoff: ${{ context.document }}: the file has context: false, so no document`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, err := load(t, tt.src)
			if err == nil {
				t.Fatalf("no error; got %+v", f)
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
	// context: true is the default.
	f, _, err := load(t, "context: true\nagents:\n  a: {model: anthropic/x}\n"+kick)
	if err != nil || f.Context.Off || !reflect.DeepEqual(f.Context, Context{}) {
		t.Errorf("context: true: %+v, %v", f, err)
	}
}
