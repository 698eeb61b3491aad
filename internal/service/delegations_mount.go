package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/worktree"
)

// DelegateCLIs are the CLI adapters a delegated agent may run.
var DelegateCLIs = []string{"claude", "codex", "gemini", "command"}

// defaultStartTimeout bounds the wait for a delegated agent to be AWAKE.
const defaultStartTimeout = time.Minute

// afterCreate, when set (by tests), is called once a delegation's record
// is made.
var afterCreate func(m *Mount)

// delegation is a session being set up, and what undo must take back.
type delegation struct {
	m       *Mount
	s       *sessions.Session
	keyDir  string
	created bool   // its record
	key     string // its agent's key file, made
	added   bool   // its worktree and branch
	proc    *detached
}

// Delegate implements [Delegations].
func (m *Mount) Delegate(ctx context.Context, a Actor, req DelegateRequest) (*Delegated, error) {
	by, err := workflow.ParseAddress(a.Name)
	if err != nil {
		return nil, errkind.Wrap(errkind.Invalid, fmt.Errorf("the delegator: %w", err))
	}
	if err := checkDelegateRequest(&req); err != nil {
		return nil, err
	}
	repo, base, err := delegateRepo(ctx, req.Repo, req.Base)
	if err != nil {
		return nil, err
	}
	depth, err := m.delegatorDepth(by, req.Depth)
	if err != nil {
		return nil, err
	}
	maxConc := limit(req.MaxConcurrent, sessions.DefaultMaxConcurrent)
	if err := sessions.CheckLimits(m.cfg.Root, by, depth, limit(req.MaxDepth, sessions.DefaultMaxDepth), maxConc); err != nil {
		return nil, limitError(err)
	}
	d := &delegation{m: m, keyDir: req.KeyDir, s: &sessions.Session{
		DelegatedBy: by, Depth: depth + 1, Repo: repo, Base: base, CLI: req.CLI, Cmd: req.Cmd,
		Model: req.Model, Title: req.Title, Host: m.cfg.Host, Status: sessions.Starting,
	}}
	ok := false
	defer func() {
		if !ok {
			d.undo()
		}
	}()
	if err := d.setUp(ctx, req, maxConc); err != nil {
		return nil, err
	}
	prompt, err := m.postPrompt(ctx, a, d.s, req)
	if err != nil {
		return nil, err
	}
	ok = true
	return &Delegated{Session: d.s, Prompt: prompt, Trust: TrustCommand(d.s)}, nil
}

// Check refuses (Invalid) a request that can never work: no prompt, an
// unknown CLI, the command CLI without its command line, a branch name
// git would refuse. Delegate checks it first.
func (req *DelegateRequest) Check() error {
	if strings.TrimSpace(req.Prompt) == "" {
		return errkind.New(errkind.Invalid, "the prompt is empty")
	}
	if cli := cmp.Or(req.CLI, "claude"); !slices.Contains(DelegateCLIs, cli) {
		return errkind.New(errkind.Invalid, "cli %q is not one of %s", cli, strings.Join(DelegateCLIs, ", "))
	}
	if req.CLI == "command" && req.Cmd == "" {
		return errkind.New(errkind.Invalid, "the command CLI needs a command line (--cmd)")
	}
	if req.Branch != "" {
		if err := worktree.CheckBranch(req.Branch); err != nil {
			return errkind.Wrap(errkind.Invalid, fmt.Errorf("branch: %w", err))
		}
	}
	return nil
}

// checkDelegateRequest checks req and fills in its defaults.
func checkDelegateRequest(req *DelegateRequest) error {
	if err := req.Check(); err != nil {
		return err
	}
	req.CLI = cmp.Or(req.CLI, "claude")
	if req.Worktrees != "" {
		// Absolute: the watcher, and resume, run elsewhere.
		abs, err := filepath.Abs(req.Worktrees)
		if err != nil {
			return errkind.Wrap(errkind.Invalid, fmt.Errorf("worktrees: %w", err))
		}
		req.Worktrees = abs
	}
	return nil
}

// delegateRepo is the repository's main working tree for the folder dir
// (where the new worktree is made and recorded, so that a delegation from
// inside a delegated agent's worktree goes beside it, not into it), and
// the base: given, or dir's working tree's branch (its commit when
// detached).
func delegateRepo(ctx context.Context, dir, base string) (repo, b string, err error) {
	here, err := worktree.Repo(ctx, dir)
	if err != nil {
		return "", "", errkind.Wrap(errkind.Invalid, fmt.Errorf("the repository: %w", err))
	}
	if repo, err = worktree.Main(ctx, here); err != nil {
		return "", "", errkind.Wrap(errkind.Invalid, fmt.Errorf("the repository: %w", err))
	}
	if base == "" {
		if base, err = worktree.CurrentBranch(ctx, here); err != nil {
			return "", "", err
		}
		if base == "" { // detached: start from its commit
			if base, err = worktree.Commit(ctx, here, "HEAD"); err != nil {
				return "", "", err
			}
		}
	}
	if _, err := worktree.Commit(ctx, repo, base); err != nil {
		return "", "", errkind.Wrap(errkind.Invalid, fmt.Errorf("base %q: %w", base, err))
	}
	return repo, base, nil
}

// delegatorDepth is the larger of the depth the door was told and the
// one recorded for the session whose agent by is: an agent reaching a
// door without its run's environment (the dashboard's /mcp) keeps its
// depth.
func (m *Mount) delegatorDepth(by string, told int) (int, error) {
	list, err := sessions.List(m.cfg.Root)
	if err != nil {
		return 0, err
	}
	depth := max(told, 0)
	for i := range list {
		if list[i].Agent == by {
			depth = max(depth, list[i].Depth)
		}
	}
	return depth, nil
}

// limit is a request's limit: 0 the default, negative none (0 for
// package sessions).
func limit(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// limitError gives a refusal of package sessions its kind.
func limitError(err error) error {
	var le *sessions.LimitError
	if errors.As(err, &le) {
		return errkind.Wrap(errkind.Conflict, err)
	}
	return err
}

// setUp makes the record, checks the concurrency limit again, makes the
// key, the branch and the worktree, and starts the watcher.
func (d *delegation) setUp(ctx context.Context, req DelegateRequest, maxConc int) error {
	if err := d.create(); err != nil {
		return err
	}
	if afterCreate != nil {
		afterCreate(d.m)
	}
	if maxConc > 0 {
		// Again with this record: a delegation that raced this one
		// between the check and the record counts too.
		n, err := sessions.CountActive(d.m.cfg.Root, d.s.DelegatedBy)
		if err != nil {
			return err
		}
		if n > maxConc {
			return errkind.Wrap(errkind.Conflict, &sessions.LimitError{Err: sessions.ErrConcurrency,
				Delegator: d.s.DelegatedBy, Have: n - 1, Max: maxConc})
		}
	}
	if err := d.makeKey(); err != nil {
		return err
	}
	if err := d.addWorktree(ctx, req); err != nil {
		return err
	}
	d.s.Args, d.s.Env = watchArgs(d.m, d.s, req), sessionEnvOf(d.s)
	d.s.Log = "delegate-" + d.s.ID + ".log"
	if err := sessions.Update(d.m.cfg.Root, d.s); err != nil {
		return err
	}
	p, err := d.m.startSession(ctx, d.s, cmp.Or(req.StartTimeout, defaultStartTimeout))
	if p != nil {
		d.proc = p
	}
	return err
}

// create makes the record under a new ID no other session or agent has.
func (d *delegation) create() error {
	for range 100 {
		id := sessions.NewID()
		d.s.ID, d.s.Agent, d.s.Channel = id, sessions.AgentID(d.s.DelegatedBy, id), sessions.Channel(id)
		if _, err := os.Lstat(d.keyPath()); err == nil {
			continue // a key of that name exists (another tree's agent)
		}
		d.s.Created = d.m.cfg.Now().UTC()
		err := sessions.Create(d.m.cfg.Root, d.s)
		if errors.Is(err, sessions.ErrExists) {
			continue
		}
		if err != nil {
			return err
		}
		d.created = true
		return nil
	}
	return errors.New("no free session id")
}

// keyPath is the file of the agent's own key.
func (d *delegation) keyPath() string {
	if d.keyDir != "" {
		return filepath.Join(d.keyDir, d.s.Agent+".key")
	}
	return signing.DefaultKeyPath(d.s.Agent, os.Getenv)
}

// makeKey makes the agent's own key pair (mode 0600) and records it in
// the session: the agent signs with it, never with the delegator's key.
func (d *delegation) makeKey() error {
	path := d.keyPath()
	sg, err := signing.NewKey(path, d.s.Agent, false)
	if err != nil {
		return fmt.Errorf("the delegated agent's key: %w", err)
	}
	d.key, d.s.Key, d.s.PublicKey = path, path, sg.PublicKey()
	return nil
}

// addWorktree names the branch (never an existing one) and adds the
// worktree on it.
func (d *delegation) addWorktree(ctx context.Context, req DelegateRequest) error {
	s := d.s
	if req.Branch != "" {
		exists, err := worktree.BranchExists(ctx, s.Repo, req.Branch)
		if err != nil {
			return err
		}
		if exists {
			return errkind.New(errkind.Invalid, "branch %s exists in %s; give another name, or none to have one made", req.Branch, s.Repo)
		}
		s.Branch = req.Branch
	} else {
		var gitErr error
		s.Branch = worktree.BranchName("", cmp.Or(req.Title, req.Prompt), func(name string) bool {
			exists, err := worktree.BranchExists(ctx, s.Repo, name)
			if err != nil {
				gitErr = err
				return false
			}
			return exists
		})
		if gitErr != nil {
			return gitErr
		}
	}
	s.Worktree = worktree.DefaultPath(req.Worktrees, s.Repo, s.Branch)
	if _, err := os.Lstat(s.Worktree); err == nil {
		return errkind.New(errkind.Conflict, "%s exists; remove it or give another branch", s.Worktree)
	}
	if err := worktree.Add(ctx, s.Repo, s.Base, s.Branch, s.Worktree); err != nil {
		return err
	}
	d.added = true
	return nil
}

// watchArgs are the collab watch arguments of s's watcher.
func watchArgs(m *Mount, s *sessions.Session, req DelegateRequest) []string {
	args := []string{"watch", "--root", string(m.cfg.Root), "--agent", s.Agent, "--channel", s.Channel,
		"--cli", s.CLI, "--workdir", s.Worktree}
	if req.Poll > 0 {
		args = append(args, "--poll", req.Poll.String())
	}
	if req.Heartbeat > 0 {
		args = append(args, "--heartbeat", req.Heartbeat.String())
	}
	if s.Cmd != "" {
		args = append(args, "--cmd", s.Cmd)
	}
	if s.Model != "" {
		args = append(args, "--model", s.Model)
	}
	if req.MaxHops != 0 {
		args = append(args, "--max-hops", strconv.Itoa(req.MaxHops))
	}
	if req.BudgetUSD > 0 {
		args = append(args, "--budget-usd", strconv.FormatFloat(req.BudgetUSD, 'f', -1, 64))
	}
	if req.BudgetTokens > 0 {
		args = append(args, "--budget-tokens", strconv.FormatInt(req.BudgetTokens, 10))
	}
	return args
}

// sessionEnvOf are the variables s's watcher gets (sessionEnv).
func sessionEnvOf(s *sessions.Session) []string {
	return []string{
		sessions.EnvDepth + "=" + strconv.Itoa(s.Depth),
		sessions.EnvWorktree + "=" + s.Worktree,
		sessions.EnvBranch + "=" + s.Branch,
		sessions.EnvDelegatedBy + "=" + s.DelegatedBy,
		sessions.EnvSession + "=" + s.ID,
		EnvKey + "=" + s.Key, // its own key; never the delegator's
	}
}

// undo takes back what the failed delegation did: its process, worktree,
// branch, key and record. What it cannot take back is logged.
func (d *delegation) undo() {
	ctx := context.Background()
	warn := func(err error) {
		if err != nil {
			d.m.cfg.Logger.Warn("delegation not taken back", "session", d.s.ID, "err", err)
		}
	}
	if d.proc != nil {
		d.proc.kill()
	}
	if d.key != "" {
		warn(os.Remove(d.key))
	}
	if d.added {
		warn(worktree.Remove(ctx, d.s.Repo, d.s.Worktree, true))
		warn(worktree.DeleteBranch(ctx, d.s.Repo, d.s.Branch))
	}
	if d.created {
		warn(sessions.Delete(d.m.cfg.Root, d.s.ID))
	}
}

// postPrompt posts the prompt to s's agent on its channel, as a.
func (m *Mount) postPrompt(ctx context.Context, a Actor, s *sessions.Session, req DelegateRequest) (*channel.Message, error) {
	a.Name = s.DelegatedBy
	res, err := m.Post(ctx, a, PostRequest{Channel: s.Channel, To: s.Agent, Type: "task_assign", Text: req.Prompt, AwaitReply: req.AwaitReply})
	if err != nil {
		return nil, fmt.Errorf("post the prompt: %w", err)
	}
	return &res.Message, nil
}

// TrustCommand is the command the tree's admin runs to trust s's agent's
// key ("" when it has none).
func TrustCommand(s *sessions.Session) string {
	if s.PublicKey == "" {
		return ""
	}
	return "collab key trust " + s.Agent + " " + s.PublicKey
}
