package channel

import (
	"strings"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// IsFor reports whether m is addressed to agent (docs/protocol.md#addressing). A message from
// agent is never for it. Otherwise it is when "to" is agent, when the text
// mentions @agent as a whole token (@qc-1 is not @qc-10), or when the first
// line of the text starts with agent as a whole word, ignoring case ("codex
// please" is for codex, "codexes are" is not). A broadcast alone wakes
// nobody.
func (m *Message) IsFor(agent string) bool {
	if agent == "" || m.From == agent {
		return false
	}
	return m.To == agent || Mentions(m.Content.Text, agent) || startsWithName(m.Content.Text, agent)
}

// IsForAny reports whether m is addressed to agent or, by one of its
// aliases, to the agent (a workflow agent reviewer--pr-123 is @reviewer in
// its instance's channel). A message from agent is never for it, and a
// message from an alias's name is not for it by that alias (as IsFor).
func (m *Message) IsForAny(agent string, aliases ...string) bool {
	if agent == "" || m.From == agent {
		return false
	}
	if m.IsFor(agent) {
		return true
	}
	for _, a := range aliases {
		if a != "" && m.From != a && (m.To == a || Mentions(m.Content.Text, a) || startsWithName(m.Content.Text, a)) {
			return true
		}
	}
	return false
}

// Mentions reports whether text has @agent as a whole token, ignoring case.
func Mentions(text, agent string) bool {
	if agent == "" {
		return false
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && tree.NameByte(text[i-1])) {
			continue
		}
		if hasWordPrefix(text[i+1:], agent) {
			return true
		}
	}
	return false
}

func startsWithName(text, agent string) bool {
	line, _, _ := strings.Cut(text, "\n")
	return hasWordPrefix(strings.TrimLeft(line, " \t\r"), agent)
}

// hasWordPrefix reports whether s starts with word, ignoring case, and the
// next byte does not continue a name.
func hasWordPrefix(s, word string) bool {
	return len(s) >= len(word) && strings.EqualFold(s[:len(word)], word) &&
		(len(s) == len(word) || !tree.NameByte(s[len(word)]))
}
