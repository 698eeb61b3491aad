package workflow

import (
	"os"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// One agent of a running instance is stopped as the whole instance is,
// through a file in ROOT/workflows that the process running the instance
// polls, on any host: WORKFLOW--INSTANCE--AGENT.UID.stop, one per account
// (as [StopNameBy]), honoured only when that account may stop the
// instance ([MayStop]). The process stops that agent's watcher (it goes
// OFFLINE), lists it in the record's Stopped, and runs the others on.
// An instance name has no "--", so an agent's stop file is never an
// instance's.

// agentStopBase is the stem of the stop files of agent (its NAME) in
// instance of workflow name.
func agentStopBase(name, instance, agent string) string {
	return name + Sep + instance + Sep + agent
}

// AgentStopNameBy is the name in ROOT/workflows of the stop file that the
// account uid writes to stop agent (its NAME) of instance of workflow
// name.
func AgentStopNameBy(name, instance, agent string, uid int) string {
	return stopNameBy(agentStopBase(name, instance, agent), uid)
}

// RequestAgentStop writes this account's stop file of agent (its NAME)
// of instance of workflow name; data says who asked (free-form JSON).
func RequestAgentStop(root tree.Root, name, instance, agent string, data []byte) error {
	d, err := safedir.Create(root.Workflows())
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Replace(AgentStopNameBy(name, instance, agent, os.Geteuid()), data, sessions.RecordPerm)
}

// AgentStopRequested reports whether agent (its NAME) of instance of
// workflow name, run by the account runner, has a stop file it honours,
// and removes it; refused is the error of one it does not honour.
func AgentStopRequested(root tree.Root, name, instance, agent string, runner int) (stop bool, refused error) {
	return stopRequested(root, agentStopBase(name, instance, agent), "", runner)
}

// ClearAgentStop removes the stop files of agent of instance of workflow
// name left from an earlier run, as [ClearStop].
func ClearAgentStop(root tree.Root, name, instance, agent string, runner int) error {
	return clearStop(root, agentStopBase(name, instance, agent), "", runner)
}
