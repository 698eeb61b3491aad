package service

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/presence"
)

// Instances lists the workflow instances and delegated sessions (see
// Workflows).
func (m *Mount) Instances(ctx context.Context) ([]Instance, error) {
	recs, err := workflow.Records(m.cfg.Root)
	if err != nil {
		return nil, errkind.Wrap(errkind.Failed, err)
	}
	slices.SortFunc(recs, func(a, b workflow.Record) int { return a.Started.Compare(b.Started) })
	out := make([]Instance, 0, len(recs))
	for _, r := range recs {
		r.Status = m.judge(r)
		out = append(out, Instance{Record: r})
	}
	list, err := sessions.List(m.cfg.Root)
	if err != nil {
		return nil, errkind.Wrap(errkind.Failed, err)
	}
	for i := range list {
		s := &list[i]
		if s.Status == sessions.Removed {
			continue
		}
		status := s.Status
		if s.Active() && s.Host == m.cfg.Host && !sessions.Alive(s) {
			status = workflow.Dead
		}
		out = append(out, Instance{Record: workflow.Record{Name: "delegate", Instance: s.ID, File: s.Branch, Host: s.Host,
			PID: s.PID, Started: s.Created, Status: status, Agents: []string{s.Agent}, Channel: s.Channel}, Delegation: s})
	}
	return out, nil
}

// StopWorkflow stops agents or instances (see Workflows). Every target must be
// one this account may stop (workflow.MayStop: the account that runs
// it, root or the tree's owner; else Forbidden, and nothing is written);
// each gets this account's stop file, which the process running it
// honours on any host.
func (m *Mount) StopWorkflow(ctx context.Context, req StopRequest) ([]StoppedTarget, error) {
	targets, err := m.stopTargets(req)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if err := workflow.MayStop(m.cfg.Root, workflow.RunnerOf(t.Record), os.Geteuid()); err != nil {
			return nil, errkind.New(errkind.Forbidden, "%s: %w", t.ID(), err)
		}
	}
	now := m.cfg.Now()
	data, _ := json.Marshal(map[string]any{"by": req.By, "host": m.cfg.Host, "time": now.UTC()})
	for _, t := range targets {
		if t.Agent == "" {
			err = workflow.RequestStop(m.cfg.Root, t.Name, t.Instance, data)
		} else {
			name, _, _ := workflow.SplitAgentID(t.Agent)
			err = workflow.RequestAgentStop(m.cfg.Root, t.Name, t.Instance, name, data)
		}
		if err != nil {
			return nil, errkind.Wrap(errkind.Failed, err)
		}
		m.cfg.Logger.Info("workflow stop asked", "target", t.ID(), "by", req.By)
	}
	if req.Wait > 0 {
		if err := m.awaitStopped(ctx, targets, req.Wait); err != nil {
			return targets, err
		}
	}
	return targets, nil
}

// stopTargets finds what req names among the running instances.
func (m *Mount) stopTargets(req StopRequest) ([]StoppedTarget, error) {
	recs, err := workflow.Records(m.cfg.Root)
	if err != nil {
		return nil, errkind.Wrap(errkind.Failed, err)
	}
	running := func(r workflow.Record) bool {
		st := m.judge(r)
		return st == workflow.Running || st == workflow.Starting
	}
	var out []StoppedTarget
	if req.All {
		for _, r := range recs {
			if running(r) {
				out = append(out, StoppedTarget{Record: r})
			}
		}
		return nonEmpty(out)
	}
	name, instance, err := parseStopTarget(req)
	if err != nil {
		return nil, err
	}
	if name == "" {
		for _, r := range recs {
			if r.Instance == instance && running(r) {
				out = append(out, StoppedTarget{Record: r})
			}
		}
		return nonEmpty(out)
	}
	if i := slices.IndexFunc(recs, func(r workflow.Record) bool { return r.Name == name && r.Instance == instance }); i >= 0 {
		r := recs[i]
		if st := m.judge(r); st != workflow.Running && st != workflow.Starting {
			return nil, errkind.New(errkind.Conflict, "%s@%s is not running (%s)", name, instance, st)
		}
		return []StoppedTarget{{Record: r}}, nil
	}
	if req.InstanceOnly {
		return nil, errkind.New(errkind.NotFound, "no workflow instance %s@%s (see collab ls)", name, instance)
	}
	id := name + workflow.Sep + instance
	for _, r := range recs {
		if r.Instance != instance || !slices.Contains(r.Agents, id) || !running(r) {
			continue
		}
		if slices.Contains(r.Stopped, id) {
			return nil, errkind.New(errkind.Conflict, "%s is already stopped", workflow.Address(id))
		}
		out = append(out, StoppedTarget{Record: r, Agent: id})
	}
	return nonEmpty(out)
}

// parseStopTarget reads req.Target: NAME@INSTANCE or @INSTANCE (name "").
func parseStopTarget(req StopRequest) (name, instance string, err error) {
	name, instance, ok := strings.Cut(req.Target, "@")
	if !ok || req.InstanceOnly && name == "" {
		want := "NAME@INSTANCE or @INSTANCE"
		if req.InstanceOnly {
			want = "WORKFLOW@INSTANCE"
		}
		return "", "", errkind.New(errkind.Invalid, "%q: want %s", req.Target, want)
	}
	if err := workflow.CheckInstance(instance); err != nil {
		return "", "", errkind.Wrap(errkind.Invalid, err)
	}
	if name != "" {
		if err := workflow.CheckName("agent or workflow", name); err != nil {
			return "", "", errkind.Wrap(errkind.Invalid, err)
		}
	}
	return name, instance, nil
}

// nonEmpty refuses no targets (NotFound).
func nonEmpty(out []StoppedTarget) ([]StoppedTarget, error) {
	if len(out) == 0 {
		return nil, errkind.New(errkind.NotFound, "no running instance matches")
	}
	return out, nil
}

// awaitStopped waits until the agents stopped are OFFLINE and the records
// of the instances stopped no longer say running (Timeout after wait).
func (m *Mount) awaitStopped(ctx context.Context, targets []StoppedTarget, wait time.Duration) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(wait)
	for {
		left := 0
		for _, t := range targets {
			agents := t.Agents
			if t.Agent != "" {
				agents = []string{t.Agent}
			}
			for _, a := range agents {
				if s, err := presence.Read(workflow.StoreRoot(m.cfg.Root, t.Record), a); err == nil && presence.IsAwake(s.Effective(m.cfg.Now(), 0, m.cfg.Host, nil)) {
					left++
				}
			}
		}
		if left == 0 {
			left = m.stillRecorded(targets)
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return errkind.Wrap(errkind.Failed, ctx.Err())
		case <-deadline:
			return errkind.New(errkind.Timeout, "%d agents still AWAKE after %v", left, wait)
		case <-tick.C:
		}
	}
}

// stillRecorded counts the whole-instance targets whose record still
// says running or starting while their process lives (it has not
// finished stopping), and the agent targets not yet recorded as stopped.
func (m *Mount) stillRecorded(targets []StoppedTarget) int {
	recs, _ := workflow.Records(m.cfg.Root)
	n := 0
	for _, r := range recs {
		live := (r.Status == workflow.Running || r.Status == workflow.Starting) &&
			!(r.Host == m.cfg.Host && r.PID > 0 && !proc.PIDAlive(r.PID))
		for _, t := range targets {
			if r.Name != t.Name || r.Instance != t.Instance || !live {
				continue
			}
			if t.Agent == "" || !slices.Contains(r.Stopped, t.Agent) {
				n++
			}
		}
	}
	return n
}
