package watchsetup

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/pricing"
	"github.com/collabdev/collab/internal/agent/prompt"
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/agent/watchconf"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/watcher"
)

// invalid is an errkind.Invalid error: the watcher as set up will not run.
func invalid(format string, args ...any) error {
	return errkind.New(errkind.Invalid, format, args...)
}

// checkTree refuses a tree whose folders others could rewrite (unless
// AllowWorld), and warns of channel folders without the sticky bit.
func checkTree(root tree.Root, s Settings, stderr io.Writer) error {
	if err := root.CheckShared(); err != nil && !errors.Is(err, os.ErrNotExist) {
		if !errors.Is(err, tree.ErrWorldWritable) {
			return fmt.Errorf("watch: %w", err) // no flag allows it
		}
		if !s.AllowWorld {
			return fmt.Errorf("watch: %w (or pass --allow-world-writable)", err)
		}
	}
	if dirs := root.Unsticky(s.Channels...); len(dirs) > 0 {
		fmt.Fprintf(stderr, "collab: warning: %s writable by the tree's group without the sticky bit, so any member can rename or remove another's files there: run 'collab init --group GROUP' again as the tree's owner (chmod +t for a channel's folder)\n",
			strings.Join(dirs, ", ")+map[bool]string{true: " is", false: " are"}[len(dirs) == 1])
	}
	return nil
}

// config is the watcher.Config of settings s that passed their check:
// the keyring, the key, the CLI adapter, the prompt's parts, the wakers
// and the run's environment.
func config(root tree.Root, s Settings, policy signing.Policy, h Host) (watcher.Config, error) {
	prices, err := pricing.Load(s.Prices)
	if err != nil {
		return watcher.Config{}, invalid("watch: --prices: %v", err)
	}
	ring, signer, noticed, err := identity(root, s, policy, h)
	if err != nil {
		return watcher.Config{}, err
	}
	cfg := watcher.Config{
		Root: root, RecoveryWindow: s.RecoveryWindow, BounceEvery: s.BounceEvery, BounceGrace: s.BounceGrace,
		Agent: s.Agent, Aliases: s.Aliases, Channels: s.Channels,
		CLI: cmp.Or(s.CLI, watchconf.DefaultCLI), SessionScope: s.SessionScope, SessionTTL: s.SessionTTL,
		BudgetUSD: s.BudgetUSD, BudgetTokens: s.BudgetTokens, Prices: prices,
		Memory: s.Memory, Context: s.Context, Workdir: s.Workdir, Timeout: s.Timeout, QuestionTimeout: s.QuestionTimeout, PostErrors: s.PostErrors,
		Poll: s.Poll, Heartbeat: s.Heartbeat, Grace: s.Grace, ClaimGrace: s.ClaimGrace,
		MaxHops: s.MaxHops, Rate: s.Rate, PairRate: s.PairRate,
		Signer: signer, Verifier: signing.NewVerifier(ring), Trust: policy, KeysNoticed: noticed,
	}
	if h.Hurry != nil {
		cfg.Hurry = h.Hurry()
	}
	if cfg.Runner, err = runner(root, s, h.getenv); err != nil {
		return watcher.Config{}, err
	}
	if c, ok := cfg.Runner.(*claude.Adapter); ok {
		c.MaxTurns = s.MaxTurns // Claude Code stops itself
	} else {
		cfg.MaxTurns = s.MaxTurns
	}
	if err := setPrompt(&cfg, s); err != nil {
		return watcher.Config{}, err
	}
	if !s.NoNotify {
		cfg.Wakers = append(cfg.Wakers, fswake.Channels{Root: root})
	}
	cfg.Env = runEnv(s, signer != nil, h.getenv).Env()
	return cfg, nil
}

// setPrompt sets the prompt's parts of cfg: the role, the template, and
// the history to answer on start.
func setPrompt(cfg *watcher.Config, s Settings) (err error) {
	if cfg.Role, err = roleText(s.Role); err != nil {
		return err
	}
	if s.PromptTemplate != "" {
		if cfg.Template, err = prompt.Load(s.PromptTemplate); err != nil {
			return invalid("watch: %v", err)
		}
	}
	if s.Replay != "" {
		if cfg.Replay, err = parseReplay(s.Replay, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// runEnv is the watcher's part of each run's environment: its limits,
// for a delegation made from the run (collab delegate carries them over
// to the agent it starts); its key; collab on the PATH; and, under
// watch --remote, the bridge.
func runEnv(s Settings, signs bool, getenv func(string) string) runenv.Watcher {
	w := runenv.Watcher{
		MaxHops: cmp.Or(s.MaxHops, watcher.DefaultMaxHops), BudgetUSD: s.BudgetUSD, BudgetTokens: s.BudgetTokens,
		StateDir: s.RemoteState,
	}
	// The run's COLLAB_KEY is its own agent's key, the one this watcher
	// signs with, or none: never one inherited from whoever started the
	// watcher (a person's, or a team's first agent's, under collab run).
	if signs {
		w.Key = cmp.Or(s.Key, signing.DefaultKeyPath(s.Agent, getenv))
	}
	// collab on the CLI's PATH, so the agent can `collab send`, `collab who`.
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "collab" {
		w.Path = filepath.Dir(exe)
		if p := getenv("PATH"); p != "" {
			w.Path += string(os.PathListSeparator) + p
		}
	}
	return w
}

// roleText reads --role: a file if one exists by that name, else the text.
func roleText(role string) (string, error) {
	if role == "" || strings.ContainsAny(role, "\n") {
		return role, nil
	}
	data, err := os.ReadFile(role)
	if err == nil {
		return string(data), nil
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENAMETOOLONG) {
		return role, nil
	}
	return "", fmt.Errorf("watch: --role %s: %w", role, err)
}

// parseReplay reads --replay-since: a duration ago, or after a message id.
func parseReplay(s string, now time.Time) (*watcher.Replay, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return &watcher.Replay{From: now.Add(-d)}, nil
	}
	n, err := channel.ParseID(s)
	if err != nil {
		return nil, invalid("watch: --replay-since %q is neither a duration (30m) nor a message id", s)
	}
	return &watcher.Replay{From: n.Time, After: s}, nil
}
