package channel_test

import (
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestIsFor(t *testing.T) {
	tests := []struct {
		name  string
		from  string
		to    string
		text  string
		agent string
		want  bool
	}{
		// 1. to equals A.
		{"to the agent", "claude", "codex", "anything", "codex", true},
		{"to another agent", "claude", "gemini", "anything", "codex", false},
		{"to is case-sensitive", "claude", "Codex", "anything", "codex", false},
		{"to a hyphenated agent", "claude", "qc-1", "x", "qc-1", true},
		{"to qc-10 is not for qc-1", "claude", "qc-10", "x", "qc-1", false},

		// 2. @A as a whole token.
		{"mention", "claude", "all", "please @codex look", "codex", true},
		{"mention at start", "claude", "all", "@codex look", "codex", true},
		{"mention at end", "claude", "all", "thanks @codex", "codex", true},
		{"mention before punctuation", "claude", "all", "thanks @codex.", "codex", true},
		{"mention before comma", "claude", "all", "@codex, @gemini: go", "gemini", true},
		{"mention in parentheses", "claude", "all", "(cc @codex)", "codex", true},
		{"mention on a later line", "claude", "all", "first line\nsecond @codex", "codex", true},
		{"mention ignores case", "claude", "all", "hey @CODEX", "codex", true},
		{"@qc-1 matches qc-1", "claude", "all", "ask @qc-1 now", "qc-1", true},
		{"@qc-10 does not match qc-1", "claude", "all", "ask @qc-10 now", "qc-1", false},
		{"@qc-1 does not match qc-10", "claude", "all", "ask @qc-1 now", "qc-10", false},
		{"@codex-2 does not wake codex", "claude", "all", "ask @codex-2 now", "codex", false},
		{"@codex_2 does not wake codex", "claude", "all", "ask @codex_2 now", "codex", false},
		{"@codexes does not wake codex", "claude", "all", "ask @codexes", "codex", false},
		{"email is not a mention", "claude", "all", "mail bob@codex.org", "codex", false},
		{"@ alone", "claude", "all", "@ codex", "codex", false},
		{"@@codex", "claude", "all", "@@codex", "codex", true},
		{"mention of another agent", "claude", "all", "@gemini look", "codex", false},
		{"mention inside a to: other", "claude", "gemini", "cc @codex", "codex", true},

		// 3. First line starts with A as a whole word.
		{"Codex please wakes codex", "claude", "all", "Codex please look", "codex", true},
		{"codex, please", "claude", "all", "codex, please", "codex", true},
		{"codex: do it", "claude", "all", "codex: do it", "codex", true},
		{"name alone", "claude", "all", "codex", "codex", true},
		{"leading spaces", "claude", "all", "  \tcodex go", "codex", true},
		{"CRLF first line", "claude", "all", "codex\r\nmore", "codex", true},
		{"codexes are does not", "claude", "all", "codexes are great", "codex", false},
		{"codex-2 does not wake codex", "claude", "all", "codex-2 please", "codex", false},
		{"codex_x does not wake codex", "claude", "all", "codex_x please", "codex", false},
		{"name later on the first line", "claude", "all", "hello codex", "codex", false},
		{"name at the start of the second line", "claude", "all", "hello\ncodex please", "codex", false},
		{"empty first line", "claude", "all", "\ncodex please", "codex", false},
		{"qc-1 please", "claude", "all", "qc-1 please", "qc-1", true},
		{"qc-10 please is not for qc-1", "claude", "all", "qc-10 please", "qc-1", false},

		// Never from oneself; to: all alone wakes nobody.
		{"from the agent, to it", "codex", "codex", "x", "codex", false},
		{"from the agent, mentioning it", "codex", "all", "@codex note to self", "codex", false},
		{"from the agent, starting with it", "codex", "all", "codex here", "codex", false},
		{"broadcast alone", "claude", "all", "hello everyone", "codex", false},
		{"broadcast with empty text", "claude", "all", "", "codex", false},
		{"empty agent", "claude", "all", "@ hi", "", false},
		{"empty agent, empty to", "claude", "", "hi", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := channel.Message{From: tt.from, To: tt.to, Content: channel.Content{Text: tt.text}}
			if got := m.IsFor(tt.agent); got != tt.want {
				t.Errorf("IsFor(%q) of from=%q to=%q text=%q = %v, want %v", tt.agent, tt.from, tt.to, tt.text, got, tt.want)
			}
		})
	}
}

func TestMentions(t *testing.T) {
	tests := []struct {
		text  string
		agent string
		want  bool
	}{
		{"@qc-1", "qc-1", true},
		{"@qc-10", "qc-1", false},
		{"@qc-1x", "qc-1", false},
		{"@qc-1!", "qc-1", true},
		{"x@qc-1", "qc-1", false},
		{"-@qc-1", "qc-1", false},
		{".@qc-1", "qc-1", true},
		{"@qc-10 and @qc-1", "qc-1", true},
		{"@QC-1", "qc-1", true},
		{"@qc", "qc-1", false},
		{"", "qc-1", false},
		{"@", "qc-1", false},
		{"qc-1", "qc-1", false},
		{"@codex\n", "codex", true},
		{"@codexé", "codex", true}, // é is not a name byte
	}
	for _, tt := range tests {
		t.Run(tt.text+"/"+tt.agent, func(t *testing.T) {
			if got := channel.Mentions(tt.text, tt.agent); got != tt.want {
				t.Errorf("Mentions(%q, %q) = %v, want %v", tt.text, tt.agent, got, tt.want)
			}
		})
	}
}

// FuzzIsFor checks the rules that must hold for any text.
func FuzzIsFor(f *testing.F) {
	f.Add("claude", "all", "@codex-2 hi", "codex")
	f.Add("claude", "all", "Codex please", "codex")
	f.Add("claude", "qc-1", "@qc-10", "qc-1")
	f.Add("codex", "codex", "@codex", "codex")
	f.Fuzz(func(t *testing.T, from, to, text, agent string) {
		m := channel.Message{From: from, To: to, Content: channel.Content{Text: text}}
		got := m.IsFor(agent)
		if from == agent && got {
			t.Fatalf("IsFor(%q) is true for a message from %q", agent, from)
		}
		if agent == "" && got {
			t.Fatalf("IsFor(\"\") is true")
		}
		if !tree.ValidName(agent) {
			return // watchers only ask about checked agent names
		}
		// A longer name that extends agent is never matched by a mention of
		// the longer name alone.
		if agent != "" && from != agent && to != agent && text == "@"+agent+"0" && got {
			t.Fatalf("IsFor(%q) matched %q", agent, text)
		}
		// Mentions and the first-word rule look at the text only.
		if got && to != agent && !channel.Mentions(text, agent) {
			first, _, _ := strings.Cut(text, "\n")
			first = strings.TrimLeft(first, " \t\r")
			if len(first) < len(agent) || !strings.EqualFold(first[:len(agent)], agent) {
				t.Fatalf("IsFor(%q) of %q is true with no rule matching", agent, text)
			}
		}
	})
}

func TestIsForAny(t *testing.T) {
	tests := []struct {
		name, from, to, text string
		want                 bool
	}{
		{"to the id", "x", "reviewer--pr-1", "hi", true},
		{"to the alias", "x", "reviewer", "hi", true},
		{"mention of the alias", "x", "all", "ask @reviewer", true},
		{"first word, the alias", "x", "all", "reviewer: go", true},
		{"longer name", "x", "all", "ask @reviewer-2", false},
		{"from the id", "reviewer--pr-1", "reviewer", "@reviewer", false},
		{"from the alias's name", "reviewer", "all", "@reviewer", false},
		{"another", "x", "all", "@coder go", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := channel.Message{From: tt.from, To: tt.to, Content: channel.Content{Text: tt.text}}
			if got := m.IsForAny("reviewer--pr-1", "reviewer"); got != tt.want {
				t.Errorf("IsForAny = %v, want %v", got, tt.want)
			}
		})
	}
}
