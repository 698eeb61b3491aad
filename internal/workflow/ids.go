package workflow

import (
	"fmt"
	"time"
)

// Sep separates an agent's name from its instance in the on-disk agent id
// NAME--INSTANCE.
const Sep = "--"

// DefaultDocument is the documents' entry file when context.document is
// not set.
const DefaultDocument = "notes.md"

// AgentID is the on-disk agent id of the agent name in instance:
// NAME--INSTANCE, a valid tree name.
func AgentID(name, instance string) (string, error) {
	return "", fmt.Errorf("workflow: not implemented")
}

// SplitAgentID splits an agent id of a workflow instance at its first
// "--"; ok is false for an id that is not one.
func SplitAgentID(id string) (name, instance string, ok bool) {
	return "", "", false
}

// ParseAddress reads an agent address as people type it: NAME@INSTANCE
// (the agent id NAME--INSTANCE) or a plain agent id.
func ParseAddress(s string) (id string, err error) {
	return "", fmt.Errorf("workflow: not implemented")
}

// CheckName checks a workflow's, agent's or instance's name: a valid tree
// name that contains no "--" and neither starts nor ends with '-'. kind
// names it in the error.
func CheckName(kind, s string) error {
	return fmt.Errorf("workflow: not implemented")
}

// CheckInstance checks an instance name (see CheckName).
func CheckInstance(s string) error { return CheckName("instance", s) }

// NewInstance makes a default instance name from now (local time) and 2
// random hex digits: MMDD-HHMM-xx, e.g. "1124-2317-ab".
func NewInstance(now time.Time) string {
	return ""
}

// Channel is the instance's channel: context.channel, or NAME--INSTANCE.
func (f *File) Channel(instance string) string {
	return ""
}

// Document is the documents' entry file: context.document, or notes.md.
func (f *File) Document() string {
	return ""
}
