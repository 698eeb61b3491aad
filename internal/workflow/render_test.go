package workflow

import (
	"errors"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	env := map[string]string{"USER": "ann", "EMPTY": ""}
	v := Vars{
		Outputs:  map[string]string{"diff": "+x ${{ env.USER }}", "empty": "", "pr-info": "t"},
		Env:      func(k string) string { return env[k] },
		Workflow: "review", Instance: "pr-1", Channel: "review--pr-1", Document: "notes.md",
	}
	tests := []struct {
		name, text, want, err string
	}{
		{"none", "plain text $ {{ x }} $x {x}", "plain text $ {{ x }} $x {x}", ""},
		{"output", "${{ diff }}", "+x ${{ env.USER }}", ""}, // not expanded again
		{"no spaces", "${{diff}}!", "+x ${{ env.USER }}!", ""},
		{"many spaces and tabs", "${{ \t diff   }}", "+x ${{ env.USER }}", ""},
		{"empty output", "[${{ empty }}]", "[]", ""},
		{"dash name", "${{ pr-info }}", "t", ""},
		{"reserved", "${{ workflow.name }} ${{ workflow.instance }} ${{ context.channel }} ${{ context.document }}", "review pr-1 review--pr-1 notes.md", ""},
		{"env", "hi ${{ env.USER }}", "hi ann", ""},
		{"env unset", "${{ env.NOPE }}", "", "workflow: ${{ env.NOPE }}: NOPE is not set (or empty)"},
		{"env empty", "${{ env.EMPTY }}", "", "workflow: ${{ env.EMPTY }}: EMPTY is not set (or empty)"},
		{"unknown", "a ${{ nope }} b", "", `workflow: unknown variable "nope"`},
		{"unknown reserved", "${{ workflow.id }}", "", `workflow: unknown variable "workflow.id"`},
		{"dotted output name", "${{ diff.x }}", "", `workflow: unknown variable "diff.x"`},
		{"bad syntax", "${{ a b }}", "", `workflow: "${{ a b }}" is not a variable name (${{ NAME }}, ${{ env.NAME }}, ${{ workflow.name }} …)`},
		{"empty expr", "${{ }}", "", `workflow: "${{ }}" is not a variable name (${{ NAME }}, ${{ env.NAME }}, ${{ workflow.name }} …)`},
		{"unclosed", "x ${{ diff", "", `workflow: "${{" without "}}"`},
		{"two", "${{diff}}${{ env.USER }}", "+x ${{ env.USER }}ann", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(tt.text, v)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %s", err, tt.err)
				}
				if got != "" {
					t.Errorf("got %q with an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := Render("${{ x }}", Vars{}); !errors.Is(err, ErrUnknownVar) {
		t.Errorf("unknown: %v does not wrap ErrUnknownVar", err)
	}
	if _, err := Render("${{ env.HOME }}", Vars{}); err == nil {
		t.Error("env with a nil Env: no error")
	}
}

// Every name Load accepts in a kickoff renders once the setup ran.
func TestRenderWhatLoadAccepts(t *testing.T) {
	f, _, err := load(t, "agents:\n  a: {cli: codex}\nsetup:\n  - shell: echo\n    as: out\nkickoff: |\n  ${{ out }} ${{ env.X }} ${{ workflow.name }} ${{ workflow.instance }} ${{ context.channel }} ${{ context.document }}\n")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Render(f.Kickoff, Vars{
		Outputs: map[string]string{"out": "o"}, Env: func(string) string { return "e" },
		Workflow: f.Name, Instance: "i", Channel: f.Channel("i"), Document: f.Document(),
	})
	if want := "o e w i w--i notes.md\n"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{"", "${{ a }}", "${{", "}}${{ env.X }}", "${{ workflow.name }}${{${{ b }}}}", "$${{ a }}}"} {
		f.Add(s)
	}
	v := Vars{Outputs: map[string]string{"a": "${{ b }}", "b": "B"}, Env: func(string) string { return "E" }, Workflow: "w"}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Render(s, v)
		if err != nil {
			return
		}
		if !strings.Contains(s, "${{") && got != s {
			t.Errorf("Render(%q) = %q: changed a text without ${{", s, got)
		}
	})
}
