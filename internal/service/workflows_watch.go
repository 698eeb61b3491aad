package service

// Each workflow agent's watcher: its keys over the settings the team's
// watchers share, made as collab watch makes one (watchsetup).

import (
	"cmp"
	"slices"
	"time"

	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workflow"
)

// agentSettings are the watch settings of workflow agent a, whose id is
// id, in channel ch, over base (the door's flags: keyring, NATS, poll,
// heartbeat, grace, log level): a key left out keeps the zero value, the
// default. The arguments that restrict its tools (tools:) come after its
// cli_args, last: each CLI's list flag then swallows no other word.
func agentSettings(base watchsetup.Settings, a workflow.Agent, id, ch string) watchsetup.Settings {
	s := watchsetup.Settings{
		Agent: id, Aliases: []string{a.Name}, Channels: []string{ch},
		CLI: a.CLI, Cmd: a.Cmd, CLIArgs: append(slices.Clip(a.CLIArgs), a.ToolArgs...), Model: a.Model,
		SessionScope: a.SessionScope, Role: a.SystemPrompt, Memory: a.Memory,
		PromptTemplate: a.PromptTemplate, Workdir: a.Workdir, Trust: a.Trust,
		Keyring: base.Keyring, AllowWritableKeyring: base.AllowWritableKeyring, NATS: base.NATS,
		Poll: base.Poll, Heartbeat: base.Heartbeat, Grace: base.Grace, LogLevel: base.LogLevel,
	}
	set := func(dst *time.Duration, p *time.Duration) {
		if p != nil {
			*dst = *p
		}
	}
	set(&s.SessionTTL, a.SessionTTL)
	set(&s.Timeout, a.Timeout)
	setInt := func(dst *int, p *int) {
		if p != nil {
			*dst = *p
		}
	}
	setInt(&s.MaxTurns, a.MaxTurns)
	setInt(&s.MaxHops, a.MaxHops)
	setInt(&s.Rate, a.Rate)
	setInt(&s.PairRate, a.PairRate)
	if a.Context != nil {
		s.Context = cmp.Or(*a.Context, -1) // context: 0 is none, as --context 0
	}
	if a.BudgetUSD != nil {
		s.BudgetUSD = *a.BudgetUSD
	}
	if a.BudgetTokens != nil {
		s.BudgetTokens = *a.BudgetTokens
	}
	if a.PostErrors != nil {
		s.PostErrors = *a.PostErrors
	}
	if a.MCP != nil {
		s.MCP = *a.MCP
	}
	if a.Live != nil {
		s.Live = *a.Live
	}
	return s
}

// agentSettings are the watch settings of the team's agent number i:
// those of its keys over base, in the team's channel; a memory store's
// watchers use no NATS (nothing of the store leaves the process).
func (t *team) agentSettings(base watchsetup.Settings, a workflow.Agent, i int) watchsetup.Settings {
	s := agentSettings(base, a, t.ids[i], t.channel)
	if t.store != t.m.cfg.Root {
		s.NATS = nil
	}
	return s
}

// verifier is the verifier of the team's first watcher (nil: none yet).
func (t *team) verifier() *signing.Verifier {
	if len(t.agents) == 0 {
		return nil
	}
	return t.agents[0].cfg.Verifier
}
