package service

import (
	"cmp"
	"context"
	"path/filepath"
	"strconv"

	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workspace/sessions"
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

// The variables of a delegation's defaults besides runenv's limits
// (collab delegate's flags read them; collab mcp gives them to
// delegate_to_worktree).
const (
	EnvDelegateCLI = "COLLAB_DELEGATE_CLI" // collab delegate --cli
	EnvDelegateCmd = "COLLAB_DELEGATE_CMD" // collab mcp --delegate-cmd
	EnvWorktrees   = "COLLAB_WORKTREES"    // collab delegate --worktrees
)

// DelegateDefaultsFrom are the defaults of a delegation asked from inside
// a model run, from the environment a watcher passes on to its CLI
// (getenv): the CLI, the worktree folder, the delegator's depth, its hops
// and budgets, and the folder of the agents' keys.
func DelegateDefaultsFrom(getenv func(string) string) DelegateRequest {
	d := DelegateRequest{CLI: getenv(EnvDelegateCLI), Cmd: getenv(EnvDelegateCmd), Worktrees: getenv(EnvWorktrees),
		Depth: sessions.Depth(getenv), KeyDir: filepath.Dir(signing.DefaultKeyPath("agent", getenv))}
	d.MaxHops, _ = strconv.Atoi(getenv(runenv.MaxHops))
	d.BudgetUSD, _ = strconv.ParseFloat(getenv(runenv.BudgetUSD), 64)
	d.BudgetTokens, _ = strconv.ParseInt(getenv(runenv.BudgetTokens), 10, 64)
	return d
}
