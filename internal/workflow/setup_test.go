package workflow

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
)

// setupFile is a File in a fresh folder with steps.
func setupFile(t *testing.T, steps ...Step) *File {
	t.Helper()
	dir := t.TempDir()
	for i := range steps {
		steps[i].Pos = Pos{"w.yaml", 10 + i, 5}
	}
	return &File{Name: "w", Path: filepath.Join(dir, "w.yaml"), Dir: dir, Setup: steps}
}

func TestRunSetup(t *testing.T) {
	f := setupFile(t,
		Step{Shell: "echo hello; echo", As: "two"},
		Step{Shell: "echo $FOO; echo warn >&2", As: "env"},
		Step{Shell: "pwd", As: "dir"},
		Step{Shell: "echo 'x ${{ two }}' > made.txt"}, // no interpolation into shells
		Step{Shell: "cat made.txt", As: "made"},
		Step{Shell: "printf no-newline", As: "raw"},
	)
	var stderr bytes.Buffer
	got, err := f.RunSetup(context.Background(), []string{"FOO=bar", "PATH=" + os.Getenv("PATH")}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.EvalSymlinks(f.Dir)
	want := map[string]string{"two": "hello\n", "env": "bar", "dir": dir, "made": "x ${{ two }}", "raw": "no-newline"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d outputs: %q", len(got), got)
	}
	if s := stderr.String(); s != "setup 2: warn\n" {
		t.Errorf("stderr %q", s)
	}
}

func TestRunSetupFailure(t *testing.T) {
	f := setupFile(t,
		Step{Shell: "true", As: "a"},
		Step{Shell: "echo out; echo first >&2; echo 'it broke' >&2; exit 3", As: "b"},
		Step{Shell: "touch after"},
	)
	var stderr bytes.Buffer
	out, err := f.RunSetup(context.Background(), nil, &stderr)
	var we *Error
	if !errors.As(err, &we) || we.Pos != (Pos{"w.yaml", 11, 5}) {
		t.Fatalf("err %v, want an *Error at the second step", err)
	}
	if want := "w.yaml:11:5: setup step failed: exit status 3; its standard error ends:\n  first\n  it broke"; err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
	var ee *proc.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Errorf("does not wrap the exit error: %v", err)
	}
	if out != nil {
		t.Errorf("outputs %q with an error", out)
	}
	if _, err := os.Stat(filepath.Join(f.Dir, "after")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the step after the failure ran: %v", err)
	}
	if !strings.Contains(stderr.String(), "setup 2: it broke\n") {
		t.Errorf("stderr %q", stderr.String())
	}
}

func TestRunSetupOutputCap(t *testing.T) {
	f := setupFile(t, Step{Shell: "head -c " + strconv.Itoa(MaxOutput) + " /dev/zero", As: "full"})
	out, err := f.RunSetup(context.Background(), nil, nil)
	if err != nil || len(out["full"]) != MaxOutput {
		t.Fatalf("exactly MaxOutput: %d bytes, %v", len(out["full"]), err)
	}
	f = setupFile(t, Step{Shell: "head -c " + strconv.Itoa(MaxOutput+1) + " /dev/zero", As: "big"})
	out, err = f.RunSetup(context.Background(), nil, nil)
	if want := "w.yaml:10:5: setup step wrote more than 1048576 bytes to standard output"; err == nil || err.Error() != want {
		t.Errorf("err %v, want %s", err, want)
	}
	if out != nil {
		t.Errorf("outputs with an error")
	}
}

// A step that times out is killed with its whole process group: the
// background sleep too.
func TestRunSetupTimeoutKillsGroup(t *testing.T) {
	f := setupFile(t, Step{Shell: "echo $$ > pid; sleep 100 & sleep 100", Timeout: 300 * time.Millisecond})
	_, err := f.RunSetup(context.Background(), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "setup step failed: timed out after 300ms") {
		t.Fatalf("err %v", err)
	}
	if !errors.Is(err, proc.ErrTimeout) {
		t.Errorf("%v does not wrap proc.ErrTimeout", err)
	}
	waitGroupGone(t, f.Dir)
}

// A step that succeeds leaves nothing running either.
func TestRunSetupSuccessKillsBackground(t *testing.T) {
	f := setupFile(t, Step{Shell: "echo $$ > pid; sleep 100 >/dev/null 2>&1 & echo ok", As: "x"})
	out, err := f.RunSetup(context.Background(), nil, nil)
	if err != nil || out["x"] != "ok" {
		t.Fatalf("%q, %v", out, err)
	}
	waitGroupGone(t, f.Dir)
}

func TestRunSetupCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := setupFile(t, Step{Shell: "touch ran"})
	if _, err := f.RunSetup(ctx, nil, nil); err == nil {
		t.Error("no error with a cancelled context")
	}
}

// waitGroupGone waits until no live process is left in the process group
// whose leader's pid the step wrote to dir/pid.
func waitGroupGone(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pgid := strings.TrimSpace(string(data))
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := liveInGroup(t, pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left in group %s: %v", pgid, live)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// liveInGroup lists the pids of processes in group pgid that are not
// zombies, from /proc.
func liveInGroup(t *testing.T, pgid string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var live []string
	for _, e := range ents {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) >= 3 && fields[2] == pgid && fields[0] != "Z" && fields[0] != "X" {
			live = append(live, e.Name())
		}
	}
	return live
}
