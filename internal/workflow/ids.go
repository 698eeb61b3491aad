package workflow

import (
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/documents"
)

// Sep separates an agent's name from its instance in the on-disk agent id
// NAME--INSTANCE.
const Sep = "--"

// DefaultDocument is the documents' entry file when context.document is
// not set.
const DefaultDocument = documents.EntryPoint

// AgentID is the on-disk agent id of the agent name in instance:
// NAME--INSTANCE, a valid tree name (at most tree.MaxNameLen bytes).
func AgentID(name, instance string) (string, error) {
	if err := CheckName("agent", name); err != nil {
		return "", err
	}
	if err := CheckInstance(instance); err != nil {
		return "", err
	}
	id := name + Sep + instance
	if err := tree.CheckName("agent", id); err != nil {
		return "", fmt.Errorf("agent %q in instance %q: %w", name, instance, err)
	}
	return id, nil
}

// SplitAgentID splits an agent id of a workflow instance at its first
// "--"; ok is false for an id that is not one (no "--", or a part that
// fails CheckName).
func SplitAgentID(id string) (name, instance string, ok bool) {
	name, instance, found := strings.Cut(id, Sep)
	if !found || CheckName("agent", name) != nil || CheckInstance(instance) != nil {
		return "", "", false
	}
	return name, instance, true
}

// ParseAddress reads an agent address as people type it: NAME@INSTANCE
// (the agent id NAME--INSTANCE) or a plain agent id. "@INSTANCE" names a
// whole instance, not an agent, and is refused here.
func ParseAddress(s string) (id string, err error) {
	name, instance, found := strings.Cut(s, "@")
	if !found {
		if err := tree.CheckName("agent", s); err != nil {
			return "", err
		}
		return s, nil
	}
	if name == "" {
		return "", fmt.Errorf("%w: %q names an instance, not an agent", tree.ErrBadName, s)
	}
	return AgentID(name, instance)
}

// Address is how an agent id is shown to people and accepted back by
// ParseAddress: NAME@INSTANCE for an agent of a workflow instance (the id
// NAME--INSTANCE), the id itself for any other agent.
func Address(id string) string {
	if name, instance, ok := SplitAgentID(id); ok {
		return name + "@" + instance
	}
	return id
}

// CheckName checks a workflow's, agent's or instance's name: a valid tree
// name that contains no "--" and neither starts nor ends with '-', so that
// NAME--INSTANCE splits back at its first "--". kind names it in the
// error.
func CheckName(kind, s string) error {
	if err := tree.CheckName(kind, s); err != nil {
		return err
	}
	switch {
	case strings.Contains(s, Sep):
		return fmt.Errorf("%w: %s name %q contains %q", tree.ErrBadName, kind, s, Sep)
	case strings.HasSuffix(s, "-"):
		return fmt.Errorf("%w: %s name %q ends with '-'", tree.ErrBadName, kind, s)
	}
	return nil
}

// CheckInstance checks an instance name (see CheckName).
func CheckInstance(s string) error { return CheckName("instance", s) }

// NewInstance makes a default instance name from now (as given: the
// caller's local time) and 4 random hex digits: MMDD-HHMM-xxxx, e.g.
// "1124-2317-ab12". Two runs started in one minute collide once in 65536.
func NewInstance(now time.Time) string {
	return now.Format("0102-1504") + "-" + randhex.String(2)
}

// Channel is the instance's channel: context.channel; else the name
// context.config's dir and channel make (DIR, STEM or DIR-STEM: see
// "Context" in the package doc); else NAME--INSTANCE. The caller checks
// it with tree.CheckName (a long name, a dir naming a variable).
func (f *File) Channel(instance string) string {
	c := f.Context
	if c.Channel != "" {
		return c.Channel
	}
	dir, _ := c.dirName(instance, f.Name)
	stem, _ := c.fileName()
	switch {
	case dir != "" && stem != "":
		return dir + "-" + stem
	case dir != "" || stem != "":
		return dir + stem
	}
	return f.Name + Sep + instance
}

// Document is the documents' entry file: context.document (or
// context.config.document), or notes.md; "" with context: false.
func (f *File) Document() string {
	if f.Context.Off {
		return ""
	}
	if f.Context.Document != "" {
		return f.Context.Document
	}
	return DefaultDocument
}
