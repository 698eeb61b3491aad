package worktree_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/testsupport/gittest"
	"github.com/collabdev/collab/internal/workspace/worktree"
)

func TestAddStatusRemove(t *testing.T) {
	ctx := context.Background()
	repo := gittest.Repo(t)
	sub := filepath.Join(repo, "sub")
	os.Mkdir(sub, 0o755)
	top, err := worktree.Repo(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if real, _ := filepath.EvalSymlinks(repo); top != real && top != repo {
		t.Fatalf("Repo = %q, want %q", top, repo)
	}
	if _, err := worktree.Repo(ctx, t.TempDir()); !errors.Is(err, worktree.ErrNotRepo) {
		t.Fatalf("Repo of a plain folder: %v, want ErrNotRepo", err)
	}
	cur, err := worktree.CurrentBranch(ctx, repo)
	if err != nil || cur != "main" {
		t.Fatalf("CurrentBranch = %q, %v", cur, err)
	}
	path := worktree.DefaultPath("", repo, "feature/x")
	if want := filepath.Join(filepath.Dir(repo), ".collab-worktrees", "repo", "feature-x"); path != want {
		t.Fatalf("DefaultPath = %q, want %q", path, want)
	}
	if err := worktree.Add(ctx, repo, "main", "feature/x", path); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{repo, path} {
		if m, err := worktree.Main(ctx, dir); err != nil || (m != repo && m != top) {
			t.Fatalf("Main(%s) = %q, %v; want %q", dir, m, err, repo)
		}
	}
	if ok, err := worktree.BranchExists(ctx, repo, "feature/x"); !ok || err != nil {
		t.Fatalf("BranchExists = %v, %v", ok, err)
	}
	st, err := worktree.Status(ctx, path, "main")
	if err != nil || st.Ahead != 0 || len(st.Dirty) != 0 || st.Branch != "feature/x" {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	os.WriteFile(filepath.Join(path, "a.txt"), []byte("a"), 0o644)
	gittest.Git(t, path, "add", "a.txt")
	gittest.Git(t, path, "commit", "--quiet", "-m", "a")
	os.WriteFile(filepath.Join(path, "b.txt"), []byte("b"), 0o644)
	st, err = worktree.Status(ctx, path, "main")
	if err != nil || st.Ahead != 1 || len(st.Dirty) != 1 || !strings.HasSuffix(st.Dirty[0], "b.txt") {
		t.Fatalf("Status after a commit and a new file = %+v, %v", st, err)
	}
	var de *worktree.DirtyError
	if err := worktree.Remove(ctx, repo, path, false); !errors.As(err, &de) || len(de.Files) != 1 {
		t.Fatalf("Remove of a dirty worktree: %v, want a DirtyError", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the refused worktree is gone: %v", err)
	}
	if err := worktree.Remove(ctx, repo, path, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("worktree still there after a forced Remove: %v", err)
	}
	if ok, _ := worktree.BranchExists(ctx, repo, "feature/x"); !ok {
		t.Fatal("Remove deleted the branch")
	}
	if err := worktree.DeleteBranch(ctx, repo, "feature/x"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := worktree.BranchExists(ctx, repo, "feature/x"); ok {
		t.Fatal("DeleteBranch left the branch")
	}
}

func TestAddRefuses(t *testing.T) {
	ctx := context.Background()
	repo := gittest.Repo(t)
	for _, tc := range []struct {
		name, base, branch string
		bad                bool // refused by CheckBranch, before git sees it
	}{
		{"bad branch", "main", "a..b", true},
		{"option branch", "main", "-f", true},
		{"a full ref", "main", "refs/heads/x", true}, // git would make refs/heads/refs/heads/x
		{"at", "main", "@", true},                    // git check-ref-format --branch takes it; worktree add does not
		{"missing base", "nope", "x", false},
		{"option base", "--help", "x", false},
		{"existing branch", "main", "main", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wt")
			err := worktree.Add(ctx, repo, tc.base, tc.branch, path)
			if err == nil {
				t.Fatal("Add succeeded")
			}
			if got := errors.Is(err, worktree.ErrBadBranch); got != tc.bad {
				t.Errorf("Add: %v; ErrBadBranch %v, want %v", err, got, tc.bad)
			}
			if refs := gittest.Git(t, repo, "for-each-ref", "--format=%(refname)", "refs/heads/"); refs != "refs/heads/main" {
				t.Errorf("branches after a refused Add:\n%s", refs)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a failed Add left %s: %v", path, err)
			}
		})
	}
}

func TestBranchName(t *testing.T) {
	taken := map[string]bool{"fix-the-login-bug": true, "fix-the-login-bug-2": true}
	for _, tc := range []struct{ text, want string }{
		{"Fix the login bug", "fix-the-login-bug-3"},
		{"  Ünïcode & stuff!! ", "n-code-stuff"},
		{"", "work"},
		{"!!!", "work"},
		{"implement the whole backend of the application in a new worktree please", "implement-the-whole-backend-of-the-application"},
	} {
		got := worktree.BranchName("", tc.text, func(s string) bool { return taken[s] })
		if got != tc.want {
			t.Errorf("BranchName(%q) = %q, want %q", tc.text, got, tc.want)
		}
		if err := worktree.CheckBranch(got); err != nil {
			t.Errorf("BranchName(%q) = %q: %v", tc.text, got, err)
		}
	}
}

func FuzzSlug(f *testing.F) {
	f.Add("Fix the login bug")
	f.Add("..//--@{")
	f.Fuzz(func(t *testing.T, s string) {
		got := worktree.Slug(s)
		if got == "" || len(got) > worktree.MaxBranchLen || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") || strings.Contains(got, "--") {
			t.Fatalf("Slug(%q) = %q", s, got)
		}
		for _, r := range got {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				t.Fatalf("Slug(%q) = %q", s, got)
			}
		}
	})
}
