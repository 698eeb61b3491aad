package service

import (
	"strings"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
)

// AgentID reads an agent as people name it (NAME or NAME@INSTANCE) and
// returns its id on disk; a bad name is Invalid. It is the layer's one
// reading of an agent's name (workflow.ParseAddress underneath).
func AgentID(s string) (string, error) { return parseAgent("agent", s) }

// parseAgent reads an agent named as people type it: NAME (a tree name,
// kind naming it in the error) or NAME@INSTANCE.
func parseAgent(kind, s string) (string, error) {
	if !strings.Contains(s, "@") {
		if err := tree.CheckName(kind, s); err != nil {
			return "", errkind.Wrap(errkind.Invalid, err)
		}
		return s, nil
	}
	id, err := workflow.ParseAddress(s)
	if err != nil {
		if kind == "recipient" {
			return "", errkind.New(errkind.Invalid, "to: %w", err)
		}
		return "", errkind.New(errkind.Invalid, "%s: %w", kind, err)
	}
	return id, nil
}
