// Package accounts runs test programs as other local accounts of one
// shared group, for the tests of what one member of a tree's group can do
// to another member's files and processes.
//
// The accounts are bare numeric ids (no /etc/passwd entry is needed): the
// test process, running as root, starts each program with that uid, the
// account's own primary group and the shared group as its supplementary
// group, umask 002 (the multi-account setup of docs/getting-started.md), and HOME and
// XDG_CONFIG_HOME in a home folder the account owns. [Require] skips the
// test where it cannot switch accounts (not root, not Linux), and fails it
// instead when $COLLAB_TEST_REQUIRE_ACCOUNTS is set, as CI sets it.
//
// It is for tests only: its functions fail the test they are given.
package accounts

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
)

// The ids used: a group and a range of accounts far above any real one.
const (
	Group   = 61000
	firstID = 61001
)

// Account is one local account of the shared group.
type Account struct {
	Name string // for messages only
	UID  int
	Home string // owned by the account, mode 0700
}

// Set is a folder that every account can reach and the accounts that use
// it: Admin (who runs 'collab init'), and two members of its group, Agent
// and Mallory.
type Set struct {
	Dir                   string // mode 0755, owned by root
	Admin, Agent, Mallory Account
}

var next atomic.Int32

// Require returns a fresh Set for t, or skips t (fails it under
// $COLLAB_TEST_REQUIRE_ACCOUNTS) where accounts cannot be switched.
func Require(t testing.TB) *Set {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		msg := "the two-account tests run as root on Linux (they start programs as other uids); run them as root or in CI"
		if os.Getenv("COLLAB_TEST_REQUIRE_ACCOUNTS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	// t.TempDir's folders are 0700: open the way down for the accounts.
	for p := dir; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &Set{Dir: dir}
	base := firstID + 3*int(next.Add(1)-1)%300
	s.Admin = s.account(t, "admin", base)
	s.Agent = s.account(t, "agent", base+1)
	s.Mallory = s.account(t, "mallory", base+2)
	return s
}

func (s *Set) account(t testing.TB, name string, uid int) Account {
	t.Helper()
	home := filepath.Join(s.Dir, "home-"+name)
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, uid, uid); err != nil {
		t.Fatal(err)
	}
	return Account{Name: name, UID: uid, Home: home}
}

// Folder makes a folder in the set's Dir owned by a (mode 0755) and
// returns its path: a tree's root for Admin, say.
func (s *Set) Folder(t testing.TB, a Account, name string) string {
	t.Helper()
	p := filepath.Join(s.Dir, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, a.UID, Group); err != nil {
		t.Fatal(err)
	}
	return p
}

// Executable copies the program at path (os.Args[0], say: a test binary
// that plays collab) into the set's Dir, where every account can run it,
// and returns the copy's path.
func (s *Set) Executable(t testing.TB, path string) string {
	t.Helper()
	// cp, not a copy by this process: a child forked meanwhile by a
	// parallel test would hold the copy's open file, and running it would
	// fail with "text file busy".
	dst := filepath.Join(s.Dir, "bin-"+filepath.Base(path))
	if out, err := exec.Command("cp", path, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp %s: %v: %s", path, err, out)
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Command returns a command that runs name with args as a, with umask
// 002, the shared group, and a's HOME; env adds variables to the test's
// own (later ones win). Nothing here goes through a shell but the fixed
// umask wrapper: name and args are passed as arguments.
func (a Account) Command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `umask 002 && exec "$0" "$@"`, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
		Uid: uint32(a.UID), Gid: uint32(a.UID), Groups: []uint32{Group},
	}}
	cmd.Env = append(os.Environ(), "HOME="+a.Home, "XDG_CONFIG_HOME="+filepath.Join(a.Home, ".config"),
		"USER="+a.Name, "LOGNAME="+a.Name)
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = a.Home
	return cmd
}

// Run runs name with args as a and returns its standard output; it fails
// t when the command fails, with its standard error.
func (a Account) Run(t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	out, errOut, err := a.Try(env, name, args...)
	if err != nil {
		t.Fatalf("as %s (uid %d): %s %q: %v\n%s", a.Name, a.UID, name, args, err, errOut)
	}
	return out
}

// Try runs name with args as a and returns what it printed on its
// standard output and error, and its error (an *exec.ExitError for a
// non-zero exit).
func (a Account) Try(env []string, name string, args ...string) (stdout, stderr string, err error) {
	cmd := a.Command(context.Background(), env, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// ExitCode is the exit status of err from Try (0 for nil, -1 when the
// program did not run to an exit).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// String is the account's name and uid, for messages.
func (a Account) String() string { return a.Name + " (uid " + strconv.Itoa(a.UID) + ")" }
