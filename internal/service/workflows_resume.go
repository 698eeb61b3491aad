package service

import (
	"context"
	"errors"
	"os"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// ResumeWorkflows restarts the background starts whose process is gone
// (see Workflows): the instances whose record says running on this host,
// with the arguments a detached start recorded, and no process of that
// start alive. Only this account's records are run again (another's is
// skipped), and only from a workflow file no other account could have
// changed (workflow.CheckFile); each restarted instance is waited for
// until its record says running again, or ended.
func (m *Mount) ResumeWorkflows(ctx context.Context, req WorkflowResumeRequest) []WorkflowResumed {
	recs, err := workflow.Records(m.cfg.Root)
	if err != nil {
		return []WorkflowResumed{{Name: "workflows", Outcome: ResumeFailed, Err: errkind.Wrap(errkind.Failed, err)}}
	}
	var out []WorkflowResumed
	for _, r := range recs {
		if r.Status != workflow.Running || r.Host != m.cfg.Host || len(r.Args) == 0 ||
			r.PID > 0 && proc.PIDAlive(r.PID) && proc.GroupHasEnv(r.PID, EnvWorkflowChild+"=1") {
			continue
		}
		out = append(out, m.resumeWorkflow(ctx, r, req))
	}
	return out
}

// resumeWorkflow restarts the instance of r, or says why not.
func (m *Mount) resumeWorkflow(ctx context.Context, r workflow.Record, req WorkflowResumeRequest) WorkflowResumed {
	res := WorkflowResumed{Name: r.Name + "@" + r.Instance}
	uid := os.Getuid()
	if err := workflow.CheckRecord(m.cfg.Root, &r, uid); errors.Is(err, sessions.ErrForeign) {
		res.Outcome, res.Err = ResumeSkipped, errkind.New(errkind.Forbidden, "its record is not this account's")
		return res
	} else if err != nil {
		res.Outcome, res.Err = ResumeFailed, errkind.Wrap(errkind.Forbidden, err)
		return res
	}
	if err := workflow.CheckFile(r.Dir, r.File, uid); err != nil {
		res.Outcome, res.Err = ResumeFailed, errkind.Wrap(errkind.Forbidden, err)
		return res
	}
	if req.Dry {
		res.Outcome = ResumeWould
		return res
	}
	logName := r.Name + workflow.Sep + r.Instance + ".log"
	d, err := m.spawn("the background process", logName, r.Dir, append([]string{"start"}, r.Args...),
		[]string{EnvWorkflowChild + "=1", EnvWorkflowResume + "=1"})
	if err != nil {
		res.Outcome, res.Err = ResumeFailed, errkind.Wrap(errkind.Failed, err)
		return res
	}
	if err := m.awaitRunning(ctx, d, r.Name, r.Instance, req.Timeout, res.Name+" is not running"); err != nil {
		d.kill()
		res.Outcome, res.Err = ResumeFailed, err
		return res
	}
	res.Outcome, res.PID = ResumeRestarted, d.pid()
	return res
}
