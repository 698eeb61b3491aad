package main

import (
	"fmt"
	"io"

	"github.com/collabdev/collab/internal/service"
)

// printResumed prints what service.Mount.ResumeWorkflows did, as collab
// resume does, and returns the names of the instances that failed.
// TODO(i24 merge): resume.go's runResume calls
// printResumed(mount(root, stderr).ResumeWorkflows(ctx, service.WorkflowResumeRequest{Dry: dry, Timeout: timeout}), stdout, stderr)
// in place of resumeWorkflows, which is then deleted.
func printResumed(res []service.WorkflowResumed, stdout, stderr io.Writer) (failed []string) {
	for _, r := range res {
		switch r.Outcome {
		case service.ResumeRestarted:
			fmt.Fprintf(stdout, "%s restarted (pid %d)\n", r.Name, r.PID)
		case service.ResumeWould:
			fmt.Fprintf(stdout, "would restart %s\n", r.Name)
		case service.ResumeSkipped:
			fmt.Fprintf(stderr, "collab: resume: skipping %s: %v\n", r.Name, r.Err)
		default:
			fmt.Fprintf(stderr, "collab: resume: %s: %v\n", r.Name, r.Err)
			failed = append(failed, r.Name)
		}
	}
	return failed
}
