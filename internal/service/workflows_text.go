package service

import (
	"fmt"
	"slices"
	"strings"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
)

// Text is r as collab run prints it at the end: the outcome, the last
// message, the documents changed and each agent's jobs and cost.
func (r RunResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "── %s@%s: %s\n", r.Workflow, r.Instance, r.Status)
	if r.Last != nil {
		fmt.Fprintf(&b, "last message: %s from %s\n", r.Last.ID, tree.Printable(workflow.Display(r.Last.From)))
	}
	if len(r.Documents) > 0 {
		fmt.Fprintf(&b, "documents changed: %s\n", tree.Printable(strings.Join(r.Documents, ", ")))
	}
	for _, a := range r.Agents {
		fmt.Fprintf(&b, "%-20s jobs %d (failed %d)  $%.4f  %d tokens\n", workflow.Display(a.Agent), a.Jobs, a.Failed, a.CostUSD, a.Tokens)
	}
	return b.String()
}

// InstancesText is list as collab ls prints it: a header, then one line
// an instance (a stopped agent marked so).
func InstancesText(list []Instance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %-16s %-30s %-8s %s\n", "NAME", "INSTANCE", "SOURCE", "STATUS", "AGENTS")
	for _, r := range list {
		var agents []string
		for _, a := range r.Agents {
			d := workflow.Display(a)
			if slices.Contains(r.Stopped, a) {
				d += "(stopped)"
			}
			agents = append(agents, d)
		}
		fmt.Fprintf(&b, "%-20s %-16s %-30s %-8s %s\n", tree.Printable(r.Name), tree.Printable(r.Instance),
			tree.Printable(r.File), r.Status, tree.Printable(strings.Join(agents, ",")))
	}
	return b.String()
}
