package proc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
)

// The test binary is its own fake child: with envMode set, TestMain runs
// helper instead of the tests.
const (
	envMode    = "GO_PROC_HELPER"  // what the helper does
	envPIDFile = "GO_PROC_PIDFILE" // where a ready helper writes its pid ("spawn": the grandchild's)
	envChild   = "GO_PROC_CHILD"   // "spawn": the grandchild's mode
	envThen    = "GO_PROC_THEN"    // "spawn": "exit", "hang" or "ignore-term" once the grandchild is ready
	envVar     = "PROC_TEST_VAR"   // "env": printed
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	switch mode {
	case "cat":
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	case "args":
		fmt.Print(strings.Join(os.Args, "\x00"))
	case "fail":
		for range 1000 {
			fmt.Fprintln(os.Stderr, "warming up the model")
		}
		fmt.Fprintln(os.Stderr, "fatal: the model is tired")
		return 1
	case "silent":
	case "flood": // 10 MiB
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 160 {
			os.Stdout.Write(chunk)
		}
		fmt.Fprint(os.Stderr, "flood done")
	case "pwd":
		wd, _ := os.Getwd()
		fmt.Print(wd)
	case "env":
		fmt.Print(os.Getenv(envVar))
	case "stdin":
		kind := "other"
		if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&fs.ModeCharDevice != 0 {
			kind = "chardev"
		} else if err == nil && fi.Mode()&fs.ModeNamedPipe != 0 {
			kind = "pipe"
		}
		n, _ := io.Copy(io.Discard, os.Stdin)
		fmt.Printf("%s %d", kind, n)
	case "lines": // lines in odd-sized writes, one long, the last without a newline
		out := []string{"first\n", "\n", "sec", "ond\nthird\n", strings.Repeat("x", 3000) + "\n", "last"}
		for _, w := range out {
			os.Stdout.WriteString(w)
			time.Sleep(time.Millisecond)
		}
	case "wait-ack": // print a line, then wait until the reader acknowledges it
		fmt.Println("ping")
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(os.Getenv(envPIDFile)); err == nil {
				fmt.Println("acked")
				return 0
			}
		}
		return 3
	case "no-read":
		fmt.Print("ok")
	case "hang":
		ready()
		time.Sleep(time.Hour)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		ready()
		time.Sleep(time.Hour)
	case "term-ok":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		ready()
		<-c
		fmt.Print("bye")
	case "spawn", "escape":
		// Start a grandchild sharing stdout ("escape": in a new session),
		// print "spawned" and write the grandchild's pid once it is ready.
		then := os.Getenv(envThen)
		if then == "ignore-term" {
			signal.Ignore(syscall.SIGTERM)
		}
		self, _ := os.Executable()
		child := exec.Command(self)
		pidFile := os.Getenv(envPIDFile)
		child.Env = append(os.Environ(), envMode+"="+os.Getenv(envChild), envPIDFile+"="+pidFile+".child")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: mode == "escape"}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(pidFile + ".child"); err == nil {
				break
			}
		}
		fmt.Println("spawned")
		// Now both are ready: pass the grandchild's pid on.
		if err := os.Rename(pidFile+".child", pidFile); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if then != "exit" {
			time.Sleep(time.Hour)
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		return 2
	}
	return 0
}

// ready writes this process's pid to $GO_PROC_PIDFILE, all at once.
func ready() {
	name := os.Getenv(envPIDFile)
	if name == "" {
		return
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		panic(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		panic(err)
	}
}

// helperSpec returns a Spec running the test binary as helper mode, with
// extra environment variables.
func helperSpec(t *testing.T, mode string, env ...string) proc.Spec {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A race-enabled binary sleeps a second at exit unless told not to.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return proc.Spec{
		Argv: []string{self},
		Env:  append(append(os.Environ(), envMode+"="+mode, "GORACE="+gorace), env...),
	}
}

// readPID waits for the pid file and kills that process when the test ends.
func readPID(t *testing.T, name string, wait time.Duration) int {
	t.Helper()
	for deadline := time.Now().Add(wait); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(name)
		if err == nil {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatalf("pid file: %v", err)
			}
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid file after %v: %v", wait, err)
		}
	}
}

// assertGone fails unless pid is dead within a short while. A zombie counts
// as dead: whether PID 1 reaps orphans is not ours to test.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !gone(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after Run returned", pid)
		}
	}
}

func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

func TestStdinArrivesByteForByte(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 256<<10) // over a pipe buffer: the child must read while we write
	for i := range noise {
		noise[i] = byte(1 + r.IntN(255))
	}
	every := make([]byte, 0, 4*256)
	for range 4 {
		for b := range 256 {
			every = append(every, byte(b))
		}
	}
	tests := []struct {
		name  string
		stdin []byte
	}{
		{"shell injection", []byte("$(touch /tmp/pwned) `id`; rm -rf / && echo 'q' \"dq\" | cat > x\n$HOME \\n ${IFS}*\n")},
		{"binary noise", noise},
		{"every byte", every},
		{"one newline", []byte("\n")},
		{"no final newline", []byte("héllo, wörld")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := helperSpec(t, "cat")
			s.Stdin = tt.stdin
			res, err := proc.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.Stdout, tt.stdin) {
				t.Errorf("stdout: got %d bytes, want the %d bytes of stdin", len(res.Stdout), len(tt.stdin))
			}
		})
	}
}

func TestArgvWithoutShell(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Found through the PATH of Spec.Env, not of this process.
	if err := os.Symlink(self, filepath.Join(dir, "fake-model-cli")); err != nil {
		t.Fatal(err)
	}
	s := helperSpec(t, "args", "PATH="+dir)
	s.Argv = []string{"fake-model-cli", "$(id)", "`id`", "a b", "'q'", "\"dq\"", ";", "|", "*", "", "line\nbreak", "$HOME"}
	res, err := proc.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Split(string(res.Stdout), "\x00"), s.Argv; !slices.Equal(got, want) {
		t.Errorf("args: got %q, want %q", got, want)
	}
}

func TestStdinEmptyIsDevNull(t *testing.T) {
	tests := []struct {
		name  string
		stdin []byte
		want  string
	}{
		{"nil", nil, "chardev 0"},
		{"empty", []byte{}, "chardev 0"},
		{"three bytes", []byte("abc"), "pipe 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := helperSpec(t, "stdin")
			s.Stdin = tt.stdin
			s.Timeout = 10 * time.Second // a child waiting on an open pipe would hang here
			res, err := proc.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.Stdout); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStdinNotRead(t *testing.T) {
	s := helperSpec(t, "no-read")
	s.Stdin = bytes.Repeat([]byte("prompt "), 1<<20) // 7 MiB the child never reads
	s.Timeout = 10 * time.Second
	res, err := proc.Run(context.Background(), s)
	if err != nil {
		t.Fatalf("a child that does not read stdin: %v", err)
	}
	if got := string(res.Stdout); got != "ok" {
		t.Errorf("stdout: got %q, want %q", got, "ok")
	}
}

func TestExitFailure(t *testing.T) {
	tests := []struct {
		name     string
		tail     int
		wantTail int
	}{
		{"default tail", 0, proc.DefaultStderrTail},
		{"short tail", 100, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := helperSpec(t, "fail")
			s.StderrTail = tt.tail
			res, err := proc.Run(context.Background(), s)
			var e *proc.ExitError
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *ExitError", err)
			}
			if e.Code != 1 || e.Signal != 0 || e.TimedOut || e.Cause != nil || res.ExitCode != 1 {
				t.Errorf("got %+v, exit code %d; want code 1 and no signal, timeout or cause", e, res.ExitCode)
			}
			if len(res.StderrTail) != tt.wantTail || !bytes.HasSuffix(res.StderrTail, []byte("fatal: the model is tired\n")) {
				t.Errorf("stderr tail: got %d bytes ending %q, want %d ending with the last line",
					len(res.StderrTail), res.StderrTail[max(0, len(res.StderrTail)-40):], tt.wantTail)
			}
			if got, want := err.Error(), s.Argv[0]+": exit status 1: fatal: the model is tired"; got != want {
				t.Errorf("Error(): got %q, want %q", got, want)
			}
		})
	}
}

func TestEmptyOutputSucceeds(t *testing.T) {
	res, err := proc.Run(context.Background(), helperSpec(t, "silent"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != 0 || res.Truncated || res.ExitCode != 0 || res.TimedOut {
		t.Errorf("got %+v, want empty stdout and exit code 0", res)
	}
}

func TestStdoutCapped(t *testing.T) {
	const flood = 10 << 20
	tests := []struct {
		name          string
		max           int
		wantLen       int
		wantTruncated bool
	}{
		{"small cap", 1000, 1000, true},
		{"default cap", 0, proc.DefaultMaxStdout, true},
		{"cap exactly the output", flood, flood, false},
		{"cap above the output", flood + 1, flood, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := helperSpec(t, "flood")
			s.MaxStdout = tt.max
			s.Timeout = 20 * time.Second // the child must not block on a full pipe
			res, err := proc.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Stdout) != tt.wantLen || res.Truncated != tt.wantTruncated {
				t.Errorf("got %d bytes, truncated %v; want %d, %v", len(res.Stdout), res.Truncated, tt.wantLen, tt.wantTruncated)
			}
			if string(res.StderrTail) != "flood done" {
				t.Errorf("stderr: got %q, want the child to finish", res.StderrTail)
			}
		})
	}
}

// TestStop covers the timeout and ctx: the group gets SIGTERM, then SIGKILL
// after KillGrace, and nothing of it survives Run.
func TestStop(t *testing.T) {
	const (
		timeout = 500 * time.Millisecond
		grace   = 400 * time.Millisecond
	)
	tests := []struct {
		name     string
		mode     string
		env      []string
		wantSig  syscall.Signal // 0: exits 0
		wantOut  string
		graceful bool // the child exits on SIGTERM: Run ends well before KillGrace
	}{
		{"hangs", "hang", nil, syscall.SIGTERM, "", true},
		{"ignores SIGTERM", "ignore-term", nil, syscall.SIGKILL, "", false},
		{"exits 0 on SIGTERM", "term-ok", nil, 0, "bye", true},
		{"grandchild holds stdout", "spawn", []string{envChild + "=hang", envThen + "=hang"}, syscall.SIGTERM, "spawned\n", true},
		{"grandchild ignores SIGTERM", "spawn", []string{envChild + "=ignore-term", envThen + "=hang"}, syscall.SIGTERM, "spawned\n", true},
		{"both ignore SIGTERM", "spawn", []string{envChild + "=ignore-term", envThen + "=ignore-term"}, syscall.SIGKILL, "spawned\n", false},
	}
	for _, trigger := range []string{"timeout", "cancel"} {
		for _, tt := range tests {
			t.Run(trigger+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				pidFile := filepath.Join(t.TempDir(), "pid")
				s := helperSpec(t, tt.mode, append(tt.env, envPIDFile+"="+pidFile)...)
				s.KillGrace = grace
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				stopAt := make(chan time.Time, 1)
				if trigger == "timeout" {
					s.Timeout = timeout
					stopAt <- time.Now().Add(timeout)
				} else {
					s.Timeout = time.Minute
					go func() {
						for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
							if _, err := os.Stat(pidFile); err == nil {
								break
							}
						}
						stopAt <- time.Now()
						cancel()
					}()
				}

				res, err := proc.Run(ctx, s)
				after := time.Since(<-stopAt)
				// The pid file exists only if the helper was ready (its
				// signals set up) before it was stopped.
				if _, err := os.Stat(pidFile); err != nil && trigger == "timeout" {
					t.Skipf("helper not ready within the %v timeout (slow machine); the cancel case covers this", timeout)
				}
				pid := readPID(t, pidFile, 0)

				var e *proc.ExitError
				if !errors.As(err, &e) {
					t.Fatalf("got %v, want an *ExitError", err)
				}
				wantCause := context.Canceled
				if trigger == "timeout" {
					wantCause = proc.ErrTimeout
				}
				if !errors.Is(err, wantCause) || e.TimedOut != (trigger == "timeout") || res.TimedOut != e.TimedOut {
					t.Errorf("got %v (TimedOut %v, Result.TimedOut %v), want cause %v", err, e.TimedOut, res.TimedOut, wantCause)
				}
				wantCode := 0
				if tt.wantSig != 0 {
					wantCode = -1
				}
				if e.Signal != tt.wantSig || e.Code != wantCode || res.ExitCode != wantCode {
					t.Errorf("got signal %v, code %d, exit code %d; want %v, %d", e.Signal, e.Code, res.ExitCode, tt.wantSig, wantCode)
				}
				if got := string(res.Stdout); got != tt.wantOut {
					t.Errorf("stdout: got %q, want %q", got, tt.wantOut)
				}
				if tt.graceful && after >= grace {
					t.Errorf("Run returned %v after the stop, want less than KillGrace %v", after, grace)
				}
				if !tt.graceful && after < grace {
					t.Errorf("Run returned %v after the stop, want KillGrace %v first", after, grace)
				}
				assertGone(t, pid)
			})
		}
	}
}

// TestKillAtOnce: a ctx cancelled with the cause ErrKill kills the whole
// group with SIGKILL at once, even a child and grandchild that ignore
// SIGTERM, without waiting for KillGrace.
func TestKillAtOnce(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := helperSpec(t, "spawn", envChild+"=ignore-term", envThen+"=ignore-term", envPIDFile+"="+pidFile)
	s.KillGrace = time.Minute
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopped := make(chan time.Time, 1)
	go func() {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(pidFile); err == nil {
				break
			}
		}
		stopped <- time.Now()
		cancel(proc.ErrKill)
	}()
	_, err := proc.Run(ctx, s)
	after := time.Since(<-stopped)
	grandchild := readPID(t, pidFile, 0)
	var e *proc.ExitError
	if !errors.As(err, &e) || !errors.Is(err, proc.ErrKill) || e.Signal != syscall.SIGKILL {
		t.Fatalf("got %v, want an *ExitError for SIGKILL with cause ErrKill", err)
	}
	if after > 10*time.Second {
		t.Errorf("Run returned %v after the kill; KillGrace was not skipped", after)
	}
	assertGone(t, grandchild)
}

// TestLeftoversKilled: a child that exits 0 leaving a grandchild on its
// stdout succeeds at once, and the grandchild is killed.
func TestLeftoversKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := helperSpec(t, "spawn", envChild+"=ignore-term", envThen+"=exit", envPIDFile+"="+pidFile)
	res, err := proc.Run(context.Background(), s) // default KillGrace: 5 s
	pid := readPID(t, pidFile, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Stdout); got != "spawned\n" {
		t.Errorf("stdout: got %q, want %q", got, "spawned\n")
	}
	if res.Duration >= 2*time.Second {
		t.Errorf("took %v: Run waited for the grandchild", res.Duration)
	}
	assertGone(t, pid)
}

// TestEscapeBounded: a grandchild that left the group is not killed, but
// Run stops waiting for the stdout it holds after KillGrace.
func TestEscapeBounded(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := helperSpec(t, "escape", envChild+"=hang", envThen+"=exit", envPIDFile+"="+pidFile)
	s.KillGrace = 200 * time.Millisecond
	res, err := proc.Run(context.Background(), s)
	pid := readPID(t, pidFile, 0) // killed by the cleanup
	if !errors.Is(err, exec.ErrWaitDelay) {
		t.Errorf("got %v, want exec.ErrWaitDelay", err)
	}
	if got := string(res.Stdout); got != "spawned\n" {
		t.Errorf("stdout: got %q, want %q", got, "spawned\n")
	}
	if gone(pid) {
		t.Errorf("the escaped grandchild %d is gone: was it in the group?", pid)
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		s    proc.Spec
		want error
	}{
		{"no argv", proc.Spec{}, proc.ErrNoProgram},
		{"not in PATH", proc.Spec{Argv: []string{"collab-proc-no-such-program"}}, exec.ErrNotFound},
		{"empty name", proc.Spec{Argv: []string{""}}, exec.ErrNotFound},
		{"not executable in PATH", proc.Spec{Argv: []string{"plain"}, Env: []string{"PATH=" + dir}}, exec.ErrNotFound},
		{"relative PATH entry", proc.Spec{Argv: []string{"plain"}, Env: []string{"PATH=."}, Dir: dir}, exec.ErrNotFound},
		{"missing path", proc.Spec{Argv: []string{filepath.Join(dir, "missing")}}, fs.ErrNotExist},
		{"not executable", proc.Spec{Argv: []string{plain}}, fs.ErrPermission},
		{"directory", proc.Spec{Argv: []string{dir}}, fs.ErrPermission},
		{"missing dir", proc.Spec{Argv: []string{self}, Dir: filepath.Join(dir, "missing")}, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := proc.Run(context.Background(), tt.s)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var e *proc.ExitError
			if errors.As(err, &e) {
				t.Errorf("got an *ExitError for a start failure: %v", err)
			}
			if len(tt.s.Argv) > 0 && !strings.Contains(err.Error(), strconv.Quote(tt.s.Argv[0])) {
				t.Errorf("error %q does not name the program", err)
			}
			if res.ExitCode != -1 {
				t.Errorf("exit code: got %d, want -1", res.ExitCode)
			}
		})
	}
}

// TestBadDirNamed: a working directory that is missing or a file is named
// as the culprit, not the program (the kernel blames the program).
func TestBadDirNamed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, dir string
		want      error
	}{
		{"missing", filepath.Join(dir, "missing"), fs.ErrNotExist},
		{"a file", file, proc.ErrNotDir},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := proc.Run(context.Background(), proc.Spec{Argv: []string{self}, Dir: tt.dir})
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if msg := err.Error(); !strings.Contains(msg, "working directory") || !strings.Contains(msg, tt.dir) || strings.Contains(msg, "fork/exec") {
				t.Errorf("error %q does not name the working directory %s as the culprit", msg, tt.dir)
			}
		})
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "fake-model-cli")); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(dir)
	for _, argv0 := range []string{self, "./fake-model-cli"} {
		t.Run(argv0, func(t *testing.T) {
			s := helperSpec(t, "pwd")
			s.Argv[0] = argv0
			s.Dir = dir
			res, err := proc.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := filepath.EvalSymlinks(string(res.Stdout)); got != want {
				t.Errorf("working directory: got %q, want %q", got, want)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	const value = "a b $(id) `id`; 'q'\nline two"
	t.Run("set", func(t *testing.T) {
		s := helperSpec(t, "env", envVar+"=first", envVar+"="+value) // the last one wins
		res, err := proc.Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.Stdout); got != value {
			t.Errorf("got %q, want %q", got, value)
		}
	})
	t.Run("inherited", func(t *testing.T) {
		t.Setenv(envVar, value)
		t.Setenv(envMode, "env")
		t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		s := helperSpec(t, "env")
		s.Env = nil
		res, err := proc.Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.Stdout); got != value {
			t.Errorf("got %q, want %q", got, value)
		}
	})
}

func TestExitErrorMessage(t *testing.T) {
	long := strings.Repeat("x", 1000)
	tests := []struct {
		name string
		e    proc.ExitError
		want string
	}{
		{"status", proc.ExitError{Name: "claude", Code: 2}, "claude: exit status 2"},
		{"last line", proc.ExitError{Name: "codex", Code: 1, StderrTail: []byte("one\ntwo\n\n  \n")}, "codex: exit status 1: two"},
		{"timeout", proc.ExitError{Name: "gemini", Code: -1, Signal: syscall.SIGKILL, TimedOut: true, Cause: proc.ErrTimeout},
			"gemini: timed out, killed by SIGKILL"},
		{"canceled", proc.ExitError{Name: "x", Code: -1, Signal: syscall.SIGTERM, Cause: context.Canceled, StderrTail: []byte("bye\r\n")},
			"x: stopped (context canceled), killed by SIGTERM: bye"},
		{"long line", proc.ExitError{Name: "x", Code: 1, StderrTail: []byte(long)}, "x: exit status 1: …" + long[:300]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStdoutLine(t *testing.T) {
	long := strings.Repeat("x", 3000)
	tests := []struct {
		name string
		max  int
		want []string
	}{
		{"default cap", 0, []string{"first", "", "second", "third", long, "last"}},
		// Lines go on past the cap, each cut to it.
		{"small cap", 4, []string{"firs", "", "seco", "thir", "xxxx", "last"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			s := helperSpec(t, "lines")
			s.MaxStdout = tt.max
			s.StdoutLine = func(b []byte) { got = append(got, string(b)) }
			res, err := proc.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("lines: got %q, want %q", got, tt.want)
			}
			wantOut := "first\n\nsecond\nthird\n" + long + "\nlast"
			if tt.max > 0 {
				wantOut = wantOut[:tt.max]
			}
			if string(res.Stdout) != wantOut {
				t.Errorf("stdout: got %q, want %q as without StdoutLine", res.Stdout, wantOut)
			}
		})
	}
}

// TestStdoutLineLive: a line reaches StdoutLine while the child runs.
func TestStdoutLineLive(t *testing.T) {
	ack := filepath.Join(t.TempDir(), "ack")
	s := helperSpec(t, "wait-ack", envPIDFile+"="+ack)
	s.Timeout = 20 * time.Second
	var got []string
	s.StdoutLine = func(b []byte) {
		got = append(got, string(b))
		if string(b) == "ping" {
			if err := os.WriteFile(ack, nil, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := proc.Run(context.Background(), s); err != nil {
		t.Fatalf("got %v; want the child to see the acknowledgement", err)
	}
	if want := []string{"ping", "acked"}; !slices.Equal(got, want) {
		t.Errorf("lines: got %q, want %q", got, want)
	}
}

// FuzzStdoutLine: whatever the child prints, StdoutLine sees its lines,
// each cut to MaxStdout. (Each input runs a child: slow, but exact.)
func FuzzStdoutLine(f *testing.F) {
	f.Add([]byte("a\nbc\n\nd"), 3)
	f.Add([]byte("\n"), 1)
	f.Add([]byte("no newline"), 100)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max <= 0 || max > 1<<16 {
			t.Skip()
		}
		var got [][]byte
		s := helperSpec(t, "cat")
		s.Stdin, s.MaxStdout = data, max
		s.StdoutLine = func(b []byte) { got = append(got, bytes.Clone(b)) }
		if _, err := proc.Run(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		if len(data) > 0 {
			for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
				want = append(want, line[:min(len(line), max)])
			}
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

// TestStartedAndEndGroup: Started gets the child's pid, which names its
// group; EndGroup ends a group another process left behind, a member that
// ignores SIGTERM included (SIGKILL after the grace), and reports a group
// that is gone as not there.
func TestStartedAndEndGroup(t *testing.T) {
	// The group is made here, as a crashed caller of Run would leave it.
	cmd := exec.Command("sh", "-c", `trap "" TERM; sleep 60 & sleep 60; wait`)
	cmd.Env = append(os.Environ(), "PROC_TEST_RUN=r1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { cmd.Wait(); close(reaped) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	time.Sleep(100 * time.Millisecond) // the trap is set
	// The group is recognised by its members' environment, not another's.
	if !proc.GroupHasEnv(cmd.Process.Pid, "PROC_TEST_RUN=r1") {
		t.Error("GroupHasEnv: the group's PROC_TEST_RUN=r1 not found")
	}
	if proc.GroupHasEnv(cmd.Process.Pid, "PROC_TEST_RUN=r2") || proc.GroupHasEnv(cmd.Process.Pid, "PROC_TEST_RUN=r") {
		t.Error("GroupHasEnv found a value the group does not have")
	}
	ended, err := proc.EndGroup(cmd.Process.Pid, 200*time.Millisecond)
	if err != nil || !ended {
		t.Fatalf("EndGroup = %v, %v; want true, nil", ended, err)
	}
	<-reaped
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-cmd.Process.Pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the group is still there after EndGroup")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if proc.GroupHasEnv(cmd.Process.Pid, "PROC_TEST_RUN=r1") {
		t.Error("GroupHasEnv: a gone group still has members")
	}
	if ended, err := proc.EndGroup(cmd.Process.Pid, time.Second); ended || err != nil {
		t.Errorf("EndGroup of a gone group = %v, %v; want false, nil", ended, err)
	}

	var got int
	s := helperSpec(t, "pwd")
	s.Started = func(pid int) { got = pid }
	if _, err := proc.Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got <= 0 {
		t.Errorf("Started got pid %d", got)
	}
}
