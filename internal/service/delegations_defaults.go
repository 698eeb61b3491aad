package service

import (
	"cmp"
	"context"
)

// WithDelegateDefaults returns svc whose Delegate fills the fields a
// request leaves zero from def: the defaults a door was given once for
// every delegation it asks (collab mcp: its --delegate-cmd and the
// limits, worktree folder and CLI of the environment a watcher gave it,
// as collab delegate's). Depth is the larger of the two.
func WithDelegateDefaults(svc Service, def DelegateRequest) Service {
	return delegateDefaults{svc, def}
}

type delegateDefaults struct {
	Service
	def DelegateRequest
}

func (d delegateDefaults) Delegate(ctx context.Context, a Actor, req DelegateRequest) (*Delegated, error) {
	def := d.def
	req.Base = cmp.Or(req.Base, def.Base)
	req.CLI = cmp.Or(req.CLI, def.CLI)
	req.Cmd = cmp.Or(req.Cmd, def.Cmd)
	req.Model = cmp.Or(req.Model, def.Model)
	req.Depth = max(req.Depth, def.Depth)
	req.MaxDepth = cmp.Or(req.MaxDepth, def.MaxDepth)
	req.MaxConcurrent = cmp.Or(req.MaxConcurrent, def.MaxConcurrent)
	req.MaxHops = cmp.Or(req.MaxHops, def.MaxHops)
	req.BudgetUSD = cmp.Or(req.BudgetUSD, def.BudgetUSD)
	req.BudgetTokens = cmp.Or(req.BudgetTokens, def.BudgetTokens)
	req.Poll = cmp.Or(req.Poll, def.Poll)
	req.Heartbeat = cmp.Or(req.Heartbeat, def.Heartbeat)
	req.Worktrees = cmp.Or(req.Worktrees, def.Worktrees)
	req.KeyDir = cmp.Or(req.KeyDir, def.KeyDir)
	req.StartTimeout = cmp.Or(req.StartTimeout, def.StartTimeout)
	return d.Service.Delegate(ctx, a, req)
}
