package worktree_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/collabdev/collab/internal/workspace/worktree"
)

func TestCheckBranch(t *testing.T) {
	for _, tc := range []struct {
		name, branch string
		why          string // "": accepted; else a part of the refusal
	}{
		{"word", "fix", ""},
		{"with slashes", "feature/login/x", ""},
		{"dots inside", "v1.2-fix", ""},
		{"at inside", "a@b", ""},
		{"at first", "@x", ""},
		{"unicode", "überarbeitung", ""},
		{"made by BranchName", worktree.BranchName("t3-", "Fix the login bug", nil), ""},
		{"longest", strings.Repeat("a", worktree.MaxBranchNameLen), ""},

		// issue 23
		{"a full ref", "refs/heads/x", "give the short name (x), not the ref"},
		{"at alone", "@", "current commit"},

		{"empty", "", "empty"},
		{"HEAD", "HEAD", "current commit"},
		{"another ref", "refs/tags/v1", "short name"},
		{"a ref of a bad name", "refs/heads/a..b", "short name, not a ref"},
		{"option", "-f", "'-'"},
		{"option long", "--force", "'-'"},
		{"double dot", "a..b", `".."`},
		{"at brace", "x@{1}", `"@{"`},
		{"at brace minus", "@{-1}", `"@{"`},
		{"space", "a b", "space"},
		{"tab", "a\tb", "control"},
		{"newline", "a\nb", "control"},
		{"NUL", "a\x00b", "control"},
		{"DEL", "a\x7fb", "control"},
		{"C1 control", "a\u0085b", "control"},
		{"bidi override", "a\u202eb", "control"},
		{"zero-width space", "a\u200bb", "control"},
		{"tilde", "a~1", `'~'`},
		{"caret", "a^", `'^'`},
		{"colon", "a:b", `':'`},
		{"question", "a?", `'?'`},
		{"star", "a*", `'*'`},
		{"bracket", "a[1]", `'['`},
		{"backslash", `a\b`, `'\\'`},
		{"trailing slash", "a/", "'/'"},
		{"leading slash", "/a", "'/'"},
		{"double slash", "a//b", `"//"`},
		{"trailing dot", "a.", "ends with '.'"},
		{"dot part", "a/.b", "starts with '.'"},
		{"dot first", ".a", "starts with '.'"},
		{"lock", "a.lock", ".lock"},
		{"lock part", "a.lock/b", ".lock"},
		{"not UTF-8", "a\xffb", "UTF-8"},
		{"too long", strings.Repeat("a", worktree.MaxBranchNameLen+1), "longer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := worktree.CheckBranch(tc.branch)
			switch {
			case tc.why == "" && err != nil:
				t.Errorf("CheckBranch(%q) = %v; want nil", tc.branch, err)
			case tc.why != "" && (!errors.Is(err, worktree.ErrBadBranch) || !strings.Contains(err.Error(), tc.why)):
				t.Errorf("CheckBranch(%q) = %v; want ErrBadBranch saying %q", tc.branch, err, tc.why)
			}
		})
	}
}

// FuzzCheckBranch: a name CheckBranch accepts is one git accepts as a
// branch name (git check-ref-format --branch, when git is installed) and
// prints unchanged; it never starts with '-' or "refs/", is UTF-8 and
// holds no blank or control character.
func FuzzCheckBranch(f *testing.F) {
	for _, s := range []string{"fix", "refs/heads/x", "@", "a/b.c", "a..b", "x@{1}", "a.lock", ".a", "a/", "-x", "é", "a\u202eb"} {
		f.Add(s)
	}
	git, _ := exec.LookPath("git")
	dir := f.TempDir() // not a repository: git does not read @{-1} and the like against one
	f.Fuzz(func(t *testing.T, name string) {
		if worktree.CheckBranch(name) != nil {
			return
		}
		if strings.HasPrefix(name, "-") || strings.HasPrefix(name, "refs/") || !utf8.ValidString(name) ||
			strings.ContainsAny(name, " \t\r\n\x00\x7f") {
			t.Fatalf("CheckBranch(%q) accepted it", name)
		}
		if git == "" {
			return
		}
		cmd := exec.Command(git, "check-ref-format", "--branch", name)
		cmd.Dir = dir
		cmd.Env = []string{"GIT_CEILING_DIRECTORIES=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + dir}
		out, err := cmd.Output()
		if err != nil || strings.TrimSuffix(string(out), "\n") != name {
			t.Fatalf("CheckBranch(%q) accepted what git check-ref-format --branch answers %q, %v", name, out, err)
		}
	})
}
