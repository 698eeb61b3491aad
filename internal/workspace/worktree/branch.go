package worktree

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrBadBranch is wrapped by [CheckBranch]'s errors.
var ErrBadBranch = errors.New("worktree: not a valid branch name")

// MaxBranchNameLen is the longest branch name [CheckBranch] accepts: the
// name, '/' made '-', is one folder's name in [DefaultPath].
const MaxBranchNameLen = 255

// CheckBranch checks a new branch's short name (x for refs/heads/x) by
// git's rules for a ref name (git check-ref-format --branch), in Go, so
// that every name it accepts git accepts too, unchanged, and means a
// branch of that name. It also refuses, stricter than git:
//
//   - a name starting with "refs/" (git would make refs/heads/refs/…): the
//     error says to give the short name;
//   - "@" and "HEAD", which git reads as the current commit;
//   - a name that is not UTF-8, has a Unicode control or format character
//     (a bidirectional override, a zero-width space), or is longer than
//     [MaxBranchNameLen] bytes.
//
// Every door that takes a branch name from outside (collab delegate
// --branch, the MCP tool delegate_to_worktree) and every git command of
// this package that names a branch calls it.
func CheckBranch(name string) error {
	if reason := branchProblem(name); reason != "" {
		return fmt.Errorf("%w: %q: %s", ErrBadBranch, name, reason)
	}
	return nil
}

// branchProblem returns why name is not a branch name CheckBranch
// accepts, or "".
func branchProblem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case name == "@" || name == "HEAD":
		return "git reads it as the current commit"
	case strings.HasPrefix(name, "refs/"):
		if short, ok := strings.CutPrefix(name, "refs/heads/"); ok && branchProblem(short) == "" {
			return fmt.Sprintf("give the short name (%s), not the ref", short)
		}
		return "give a branch's short name, not a ref"
	case strings.HasPrefix(name, "-"):
		return "it starts with '-'"
	case len(name) > MaxBranchNameLen:
		return fmt.Sprintf("it is longer than %d bytes", MaxBranchNameLen)
	case !utf8.ValidString(name):
		return "it is not UTF-8"
	case strings.Contains(name, ".."):
		return `it has ".."`
	case strings.Contains(name, "@{"):
		return `it has "@{"`
	case strings.HasSuffix(name, "."):
		return "it ends with '.'"
	}
	for _, r := range name {
		switch {
		case r <= ' ' || r == 0x7f || unicode.In(r, unicode.Cc, unicode.Cf):
			return "it has a space or a control character"
		case strings.ContainsRune(`~^:?*[\`, r):
			return fmt.Sprintf("it has %q", r)
		}
	}
	for c := range strings.SplitSeq(name, "/") {
		switch {
		case c == "":
			return "it starts or ends with '/', or has \"//\""
		case strings.HasPrefix(c, "."):
			return "a part between slashes starts with '.'"
		case strings.HasSuffix(c, ".lock"):
			return `a part between slashes ends with ".lock"`
		}
	}
	return ""
}
