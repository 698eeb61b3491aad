// Package worktree adds, inspects and removes git worktrees for delegated
// work: each delegated agent (collab delegate) or claimed task (collab
// task claim --worktree) works on its own branch in its own folder, so
// parallel work does not collide in one working tree.
//
// Git is run as a program (exec, never a shell), bounded by the caller's
// context and [Timeout]; every path or ref that comes from outside follows
// "--" where git accepts it, and every branch name is checked by git's
// ref-name rules ([CheckBranch], in Go) before git sees it.
//
// # Where worktrees go
//
// [DefaultPath] puts the worktree of BRANCH of the repository REPO in
// REPO/../.collab-worktrees/NAME/SLUG (NAME the repository folder's name,
// SLUG the branch with '/' turned into '-'): outside the repository's
// working tree, so git status there does not list it, and next to it, so
// it stays on the same file system. $COLLAB_WORKTREES, when set, replaces
// REPO/../.collab-worktrees (the caller passes it as base).
//
// # Removing
//
// [Remove] refuses a worktree with uncommitted changes (a [*DirtyError]
// listing them) unless forced, and never deletes the branch: the work
// stays reachable. [DeleteBranch] is for the caller that made a branch and
// failed before anything was done on it.
package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
)

// Timeout bounds one git command.
const Timeout = time.Minute

// MaxBranchLen is the longest branch name [BranchName] makes.
const MaxBranchLen = 48

// ErrNotRepo is wrapped by [Repo] when the folder is not in a git
// repository.
var ErrNotRepo = errors.New("worktree: not in a git repository")

// DirtyError is [Remove]'s refusal of a worktree with uncommitted changes.
type DirtyError struct {
	Path  string
	Files []string // as git status --porcelain lists them, "XY path"
}

func (e *DirtyError) Error() string {
	return fmt.Sprintf("worktree %s has uncommitted changes: %s", e.Path, strings.Join(e.Files, ", "))
}

// State is a worktree's state against its base.
type State struct {
	Branch string   `json:"branch"`          // the branch checked out; "" if detached
	Head   string   `json:"head"`            // the commit checked out
	Ahead  int      `json:"ahead"`           // commits on HEAD not on base
	Dirty  []string `json:"dirty,omitempty"` // uncommitted changes, "XY path"
}

// git runs git with args in dir and returns its standard output with the
// trailing newline removed; a failure carries git's last stderr line.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	res, err := proc.Run(ctx, proc.Spec{
		Argv:    append([]string{"git"}, args...),
		Env:     gitEnv(),
		Dir:     dir,
		Timeout: Timeout,
	})
	if err != nil {
		msg := strings.TrimSpace(string(res.StderrTail))
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], msg)
	}
	return strings.TrimRight(string(res.Stdout), "\n"), nil
}

// gitEnv is the environment git runs with: ours, without the variables
// that would point it at another repository, never prompting and never
// taking an optional lock.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR":
			continue
		}
		env = append(env, kv)
	}
	// GIT_OPTIONAL_LOCKS=0: collab looks at worktrees an agent is working
	// in, and git status would otherwise refresh the index under
	// index.lock, failing the agent's own git commit at that moment.
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// Repo is the top-level folder of the repository dir is in.
func Repo(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%w: %s (%v)", ErrNotRepo, dir, err)
	}
	return out, nil
}

// Main is the main working tree of the repository dir is in (the first
// of git worktree list): the repository itself when dir is in one of its
// worktrees, so that worktrees made from a worktree go beside the
// others, not inside it.
func Main(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "worktree", "list", "--porcelain")
	if err != nil {
		return "", fmt.Errorf("%w: %s (%v)", ErrNotRepo, dir, err)
	}
	first, _, _ := strings.Cut(out, "\n")
	path, ok := strings.CutPrefix(first, "worktree ")
	if !ok || path == "" {
		return "", fmt.Errorf("%w: %s (no main worktree)", ErrNotRepo, dir)
	}
	return path, nil
}

// CurrentBranch is the branch checked out in repo ("" when detached).
func CurrentBranch(ctx context.Context, repo string) (string, error) {
	out, err := git(ctx, repo, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		if _, err2 := git(ctx, repo, "rev-parse", "--verify", "HEAD"); err2 == nil {
			return "", nil
		}
		return "", err
	}
	return out, nil
}

// Commit is the commit rev names in repo.
func Commit(ctx context.Context, repo, rev string) (string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("worktree: bad revision %q", rev)
	}
	out, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("worktree: %q is not a commit in %s", rev, repo)
	}
	return out, nil
}

// BranchExists reports whether repo has a local branch name.
func BranchExists(ctx context.Context, repo, name string) (bool, error) {
	if err := CheckBranch(name); err != nil {
		return false, err
	}
	res, err := proc.Run(ctx, proc.Spec{
		Argv:    []string{"git", "show-ref", "--verify", "--quiet", "refs/heads/" + name},
		Env:     gitEnv(),
		Dir:     repo,
		Timeout: Timeout,
	})
	if err == nil {
		return true, nil
	}
	if res.ExitCode == 1 {
		return false, nil
	}
	return false, fmt.Errorf("git show-ref: %v", err)
}

// Slug is text made into a branch name's words: lower case ASCII letters
// and digits, runs of anything else one '-', at most MaxBranchLen bytes,
// cut at a word; "work" when nothing is left.
func Slug(text string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(text) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= MaxBranchLen {
				break
			}
			continue
		}
		dash = true
	}
	s := b.String()
	if len(s) > MaxBranchLen {
		s = s[:MaxBranchLen]
	}
	if len(s) > 24 {
		if i := strings.LastIndexByte(s, '-'); i >= 16 {
			s = s[:i]
		}
	}
	s = strings.Trim(s, "-")
	if s == "" {
		return "work"
	}
	return s
}

// BranchName is a new branch name made from text (a title or a prompt):
// prefix + [Slug](text), then -2, -3, … until exists says no. exists is
// asked about every candidate; a nil exists accepts the first.
func BranchName(prefix, text string, exists func(string) bool) string {
	base := prefix + Slug(text)
	name := base
	for i := 2; exists != nil && exists(name); i++ {
		name = base + "-" + strconv.Itoa(i)
	}
	return name
}

// DefaultPath is where the worktree of branch of repo goes: under dir
// (REPO/../.collab-worktrees when dir is ""), in a folder named for the
// repository, then the branch with '/' made '-'.
func DefaultPath(dir, repo, branch string) string {
	if dir == "" {
		dir = filepath.Join(filepath.Dir(repo), ".collab-worktrees")
	}
	return filepath.Join(dir, filepath.Base(repo), strings.ReplaceAll(branch, "/", "-"))
}

// Add adds a worktree at path on a new branch made from base (git
// worktree add -b BRANCH PATH BASE). The branch must not exist and path
// must not exist or be an empty folder; on failure nothing is left.
func Add(ctx context.Context, repo, base, branch, path string) error {
	if err := CheckBranch(branch); err != nil {
		return err
	}
	if base == "" {
		base = "HEAD"
	} else if strings.HasPrefix(base, "-") {
		return fmt.Errorf("worktree: bad base %q", base)
	}
	if _, err := Commit(ctx, repo, base); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if _, err := git(ctx, repo, "worktree", "add", "--quiet", "-b", branch, "--", path, base); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// Status is the state of the worktree at path against base: its branch
// and head, the commits on it that base has not (git rev-list --count
// BASE..HEAD) and its uncommitted changes (git status --porcelain).
func Status(ctx context.Context, path, base string) (*State, error) {
	st := &State{}
	head, err := git(ctx, path, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	st.Head = head
	if br, err := git(ctx, path, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
		st.Branch = br
	}
	if base != "" && !strings.HasPrefix(base, "-") {
		n, err := git(ctx, path, "rev-list", "--count", base+"..HEAD", "--")
		if err != nil {
			return nil, err
		}
		st.Ahead, _ = strconv.Atoi(n)
	}
	st.Dirty, err = dirty(ctx, path)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func dirty(ctx context.Context, path string) ([]string, error) {
	out, err := git(ctx, path, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var files []string
	for line := range strings.SplitSeq(out, "\n") {
		if line = strings.TrimRight(line, "\r"); line != "" {
			files = append(files, line)
		}
	}
	return files, nil
}

// Remove removes the worktree at path from repo, keeping its branch. A
// worktree with uncommitted changes is refused with a [*DirtyError]
// unless force.
func Remove(ctx context.Context, repo, path string, force bool) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		_, err := git(ctx, repo, "worktree", "prune")
		return err
	}
	files, err := dirty(ctx, path)
	if err != nil {
		return err
	}
	if len(files) > 0 && !force {
		return &DirtyError{Path: path, Files: files}
	}
	args := []string{"worktree", "remove"}
	if force {
		args = append(args, "--force")
	}
	if _, err := git(ctx, repo, append(args, "--", path)...); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// DeleteBranch deletes branch from repo even if unmerged (git branch -D);
// for undoing an [Add] whose work never started.
func DeleteBranch(ctx context.Context, repo, branch string) error {
	if err := CheckBranch(branch); err != nil {
		return err
	}
	_, err := git(ctx, repo, "branch", "--quiet", "-D", "--", branch)
	return err
}
