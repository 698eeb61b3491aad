// Package proc runs a program bounded: without a shell, in a process group
// of its own, with a time limit and capped output, and with nothing of the
// group left running when [Run] returns.
//
// # Running
//
// Spec.Argv is executed directly: no shell, so no word splitting, quoting,
// globbing or substitution; each argument arrives as given. An Argv[0]
// without a slash is looked up in the PATH of Spec.Env, or in the current
// process's PATH when Env is nil or has none. A PATH entry that is empty or
// relative is skipped, as [exec.LookPath] would refuse it ([exec.ErrDot]).
// A relative Argv[0] with a slash is relative to Spec.Dir. The program sees
// Argv[0] as given, not the path found.
//
// Spec.Stdin is written to the child byte for byte through a pipe from a
// goroutine, then the pipe is closed; a child that never reads it does not
// block Run, and its closing the pipe early (EPIPE) is not an error. An
// empty Stdin gives the child /dev/null, never an open pipe: a program
// that reads standard input then sees end of file at once.
//
// Standard output is kept up to Spec.MaxStdout bytes; the rest is read and
// discarded, so a child writing without end never blocks on a full pipe,
// and Result.Truncated is set. Of standard error only the last
// Spec.StderrTail bytes are kept.
//
// Spec.StdoutLine, when set, also sees the whole of standard output as it
// arrives, a line at a time: past MaxStdout too, so a caller can parse a
// stream (JSON lines) of any length in bounded memory. Each line comes
// without its newline; a line longer than MaxStdout bytes comes cut to its
// first MaxStdout bytes; a last line without a newline comes when the
// output ends. The calls come one at a time and in order (from the
// goroutine that reads the pipe, the last one perhaps from Run's own), all
// before Run returns. The slice is valid only during the call. A slow
// StdoutLine slows the child, which then waits on a full pipe; the time
// limits still hold.
//
// # Ending
//
// The child leads a new process group. The run is over when the child
// exits: whatever it left behind in its group (background jobs, helpers
// still holding its output open) is then killed with SIGKILL. This happens
// before the child is reaped, so the group id cannot have been reused.
//
// When Spec.Timeout expires or ctx is done, the whole group gets SIGTERM
// (and SIGCONT, so that a stopped process sees it). A child still running
// Spec.KillGrace later gets SIGKILL, and with it the rest of its group.
// When ctx is cancelled with the cause [ErrKill] (context.WithCancelCause),
// the group gets SIGKILL at once instead: for a caller that must exit now.
//
// Run returns the [Result] in every case, with any partial output. The
// error is an [*ExitError] when the child did not exit 0 on its own: a
// non-zero status, a signal, the timeout or ctx. Failures to start (not
// found, not executable, bad Dir) are returned wrapped, prefixed "proc:
// start"; a Dir that is missing or not a directory is named as the
// culprit ("working directory"), not the program.
//
// # Escapes
//
// Only the process group is tracked. A descendant that leaves it (setsid,
// setpgid, a daemon's double fork) is not killed. If it keeps the child's
// output open, Run waits at most KillGrace after the child exits, then
// closes its ends of the pipes and, if the child had succeeded, returns an
// error wrapping [exec.ErrWaitDelay].
//
// If the calling process dies without returning from Run (SIGKILL, crash),
// the group is left running.
//
// Killed descendants are reparented to the nearest subreaper, usually
// PID 1, which must reap them: in a container, run an init (docker --init)
// or zombies accumulate.
//
// # Liveness
//
// [PIDAlive] is the one rule for "does this process still run": a zombie
// (exited, not yet reaped by its parent) is dead. [GroupHasEnv] skips
// zombie members likewise.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults for the zero values of [Spec] fields.
const (
	DefaultKillGrace  = 5 * time.Second
	DefaultMaxStdout  = 1 << 20
	DefaultStderrTail = 8 << 10
)

// ErrNoProgram is returned by [Run] for an empty Argv.
var ErrNoProgram = errors.New("proc: no program")

// ErrKill, as the cause of ctx's cancellation, has Run kill the group with
// SIGKILL at once, with no SIGTERM and no grace.
var ErrKill = errors.New("proc: killed at once")

// ErrTimeout is the cause recorded when Spec.Timeout expires; an
// [*ExitError] with TimedOut set unwraps to it.
var ErrTimeout = errors.New("proc: timed out")

// MaxStderrLine is the longest stderr line passed to Spec.StderrLine.
const MaxStderrLine = 1 << 10

// Spec describes one run.
type Spec struct {
	Argv       []string      // program and arguments, run without a shell
	Env        []string      // the whole environment; nil inherits os.Environ()
	Dir        string        // working directory; "" is the current one
	Stdin      []byte        // written to the child; empty: /dev/null
	Timeout    time.Duration // 0: none
	KillGrace  time.Duration // SIGTERM to SIGKILL; 0: DefaultKillGrace
	MaxStdout  int           // stdout bytes kept; 0: DefaultMaxStdout
	StderrTail int           // stderr bytes kept, the last ones; 0: DefaultStderrTail
	StdoutLine func([]byte)  // called with each line of stdout as it arrives; nil: none
	// StderrLine, when set, is called with each line of stderr as it
	// arrives, cut to MaxStderrLine bytes.
	StderrLine func([]byte)
	// Started, when set, is called with the child's pid once it has
	// started, before Run waits for it. The pid is also the id of the
	// child's process group, which [EndGroup] can end later, from another
	// process if need be (the caller died and a new one takes over).
	Started func(pid int)
}

// Result is what a run produced, returned even when Run fails.
type Result struct {
	Stdout     []byte        // at most MaxStdout bytes
	Truncated  bool          // stdout went past MaxStdout
	StderrTail []byte        // the last StderrTail bytes of stderr
	ExitCode   int           // -1 if a signal ended the child (or it never ran)
	Duration   time.Duration // from start to the end of the output
	TimedOut   bool          // Spec.Timeout expired and the group was signalled
}

// ExitError reports a child that did not exit 0 on its own.
type ExitError struct {
	Name       string         // Argv[0]
	Code       int            // exit status; -1 if a signal ended the child
	Signal     syscall.Signal // the signal that ended the child; 0 if it exited
	TimedOut   bool           // Spec.Timeout expired
	Cause      error          // why the group was signalled: ErrTimeout or context.Cause(ctx); nil if it was not
	StderrTail []byte         // the last bytes of stderr
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString(e.Name)
	b.WriteString(": ")
	switch {
	case e.TimedOut:
		b.WriteString("timed out, ")
	case e.Cause != nil:
		fmt.Fprintf(&b, "stopped (%v), ", e.Cause)
	}
	if e.Signal != 0 {
		fmt.Fprintf(&b, "killed by %s", unix.SignalName(e.Signal))
	} else {
		fmt.Fprintf(&b, "exit status %d", e.Code)
	}
	if line := lastLine(e.StderrTail); line != "" {
		b.WriteString(": ")
		b.WriteString(line)
	}
	return b.String()
}

// Unwrap returns the cause, so that errors.Is(err, context.Canceled) or
// errors.Is(err, ErrTimeout) tell why the child was stopped.
func (e *ExitError) Unwrap() error { return e.Cause }

// maxLine bounds the stderr line quoted by ExitError.Error.
const maxLine = 300

// lastLine returns the last non-blank line of b, shortened to maxLine bytes.
func lastLine(b []byte) string {
	b = bytes.TrimRight(b, " \t\r\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	s := strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD")
	if len(s) > maxLine {
		s = "…" + strings.ToValidUTF8(s[len(s)-maxLine:], "")
	}
	return s
}

// Run runs s.Argv as described in the package documentation and returns
// when the child has exited, its group is gone and its output is read.
func Run(ctx context.Context, s Spec) (Result, error) {
	res := Result{ExitCode: -1}
	if len(s.Argv) == 0 {
		return res, ErrNoProgram
	}
	s = s.withDefaults()
	name := s.Argv[0]
	path, err := lookPath(name, s.Env)
	if err != nil {
		return res, fmt.Errorf("proc: start %q: %w", name, err)
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.Timeout, ErrTimeout)
		defer cancel()
	}
	c := newChild(ctx, path, s)
	start := time.Now()
	if err := c.cmd.Start(); err != nil {
		res.Duration = time.Since(start)
		if derr := checkDir(s.Dir); derr != nil {
			// The child's chdir failed, which the kernel reports as the
			// program's error: name the working directory instead.
			return res, fmt.Errorf("proc: start %q: %w", name, derr)
		}
		return res, fmt.Errorf("proc: start %q: %w", name, err)
	}
	if s.Started != nil {
		s.Started(c.cmd.Process.Pid)
	}
	werr := c.wait()
	res.Duration = time.Since(start)
	return c.result(res, werr)
}

// ErrNotDir is wrapped when Spec.Dir is not a directory.
var ErrNotDir = errors.New("not a directory")

// checkDir returns why dir cannot be a working directory, or nil ("" is
// the current one).
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("working directory %s: %w", dir, ErrNotDir)
	}
	return nil
}

// withDefaults returns s with its zero limits set to the defaults.
func (s Spec) withDefaults() Spec {
	if s.KillGrace <= 0 {
		s.KillGrace = DefaultKillGrace
	}
	if s.MaxStdout <= 0 {
		s.MaxStdout = DefaultMaxStdout
	}
	if s.StderrTail <= 0 {
		s.StderrTail = DefaultStderrTail
	}
	return s
}

// child is one run of a Spec: the command and what collects its output.
type child struct {
	name   string // Argv[0]
	cmd    *exec.Cmd
	stdout *capped
	stderr *tail
	lines  *lines // nil without Spec.StdoutLine
	elines *lines // nil without Spec.StderrLine
	// stopped is why the group was signalled (ErrTimeout, ctx's cause), or
	// nil. It is set by cmd.Cancel, which os/exec calls at most once and
	// before Wait returns.
	stopped error
}

// newChild prepares the command for path: the group of its own, the
// output collectors, and the stop on ctx (signal the group, then kill the
// child KillGrace later).
func newChild(ctx context.Context, path string, s Spec) *child {
	c := &child{
		name:   s.Argv[0],
		stdout: &capped{max: s.MaxStdout},
		stderr: &tail{max: s.StderrTail},
	}
	cmd := exec.CommandContext(ctx, path)
	cmd.Args = append([]string(nil), s.Argv...)
	cmd.Env = s.Env
	cmd.Dir = s.Dir
	if len(s.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(s.Stdin) // copied by an os/exec goroutine, EPIPE ignored
	}
	cmd.Stdout = c.stdout
	if s.StdoutLine != nil {
		c.lines = &lines{f: s.StdoutLine, max: s.MaxStdout}
		cmd.Stdout = io.MultiWriter(c.stdout, c.lines)
	}
	cmd.Stderr = c.stderr
	if s.StderrLine != nil {
		c.elines = &lines{f: s.StderrLine, max: MaxStderrLine}
		cmd.Stderr = io.MultiWriter(c.stderr, c.elines)
	}
	cmd.SysProcAttr = procAttr()
	cmd.Cancel = func() error {
		sig := syscall.SIGTERM
		if errors.Is(context.Cause(ctx), ErrKill) {
			sig = syscall.SIGKILL
		}
		err := signalGroup(cmd.Process.Pid, sig)
		if err == nil {
			c.stopped = context.Cause(ctx)
			_ = signalGroup(cmd.Process.Pid, syscall.SIGCONT)
		}
		return err
	}
	// After Cancel, or after the child exits, os/exec waits WaitDelay, then
	// kills the child (only the child: the group follows below) and closes
	// the pipes.
	cmd.WaitDelay = s.KillGrace
	c.cmd = cmd
	return c
}

// wait waits for the started child to exit, kills what is left of its
// group, reaps it and finishes reading its output.
func (c *child) wait() error {
	// The child is waitable but not reaped, so its pid still names the
	// group: kill what is left of it, then reap.
	pgid := c.cmd.Process.Pid
	if awaitExit(pgid) == nil {
		_ = signalGroup(pgid, syscall.SIGKILL)
	}
	werr := c.cmd.Wait()
	if c.lines != nil {
		c.lines.flush() // os/exec's copying goroutine is done
	}
	if c.elines != nil {
		c.elines.flush()
	}
	return werr
}

// result fills res from the reaped child and returns the error Run
// reports: nil for a child that exited 0 on its own, else an *ExitError
// (or Wait's own error).
func (c *child) result(res Result, werr error) (Result, error) {
	res.Stdout, res.Truncated = c.stdout.buf, c.stdout.over
	res.StderrTail = c.stderr.bytes()
	res.TimedOut = errors.Is(c.stopped, ErrTimeout)
	state := c.cmd.ProcessState
	if state == nil { // Wait failed to get a status
		return res, fmt.Errorf("proc: wait %q: %w", c.name, werr)
	}
	res.ExitCode = state.ExitCode()
	if state.Success() && c.stopped == nil {
		if werr != nil { // ErrWaitDelay, or copying stdin failed
			return res, fmt.Errorf("proc: %s: %w", c.name, werr)
		}
		return res, nil
	}
	e := &ExitError{
		Name:       c.name,
		Code:       res.ExitCode,
		TimedOut:   res.TimedOut,
		Cause:      c.stopped,
		StderrTail: res.StderrTail,
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal()
	}
	return res, e
}

// endPoll is how often EndGroup looks whether the group is gone.
const endPoll = 20 * time.Millisecond

// EndGroup ends process group pgid on this host, if it still has members:
// SIGTERM (and SIGCONT), then SIGKILL if any is left grace later. It
// reports whether the group was there. A group of a run whose caller died
// (SIGKILL, a crash) outlives it: its leader gets the parent-death signal,
// the rest of the group does not. Only pass a pgid known to be such a
// group on this host and boot: a pid reused as a group leader since would
// be signalled too.
func EndGroup(pgid int, grace time.Duration) (bool, error) {
	if pgid <= 1 || pgid > 1<<31-1 {
		return false, fmt.Errorf("proc: end group %d: not a process group", pgid)
	}
	if err := signalGroup(pgid, 0); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return false, nil
		}
		return true, fmt.Errorf("proc: end group %d: %w", pgid, err)
	}
	if err := signalGroup(pgid, syscall.SIGTERM); err != nil {
		return !errors.Is(err, os.ErrProcessDone), nil
	}
	_ = signalGroup(pgid, syscall.SIGCONT)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); {
		time.Sleep(endPoll)
		if signalGroup(pgid, 0) != nil {
			return true, nil
		}
	}
	if err := signalGroup(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return true, fmt.Errorf("proc: end group %d: %w", pgid, err)
	}
	return true, nil
}

// GroupHasEnv reports whether a live member of process group pgid on this
// host has kv ("KEY=value") in its environment, as /proc shows it: a check
// that a recorded pgid still names the group of that run, not one that
// reused the id. Members of other users, zombies and systems without /proc
// show nothing: false.
func GroupHasEnv(pgid int, kv string) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgrp != pgid || st.exited() {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), kv) {
			return true
		}
	}
	return false
}

// awaitExit blocks until process pid has exited, leaving it waitable.
func awaitExit(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// signalGroup sends sig to process group pgid. An empty group is
// os.ErrProcessDone, which tells os/exec the child had already exited.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if err == syscall.ESRCH {
		return os.ErrProcessDone
	}
	return err
}

// lookPath finds file in the PATH of env, or of this process if env sets
// none. A name with a slash is returned as it is: starting it reports any
// problem.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	list, ok := getenv(env, "PATH")
	if !ok {
		list = os.Getenv("PATH")
	}
	if file != "" {
		for _, dir := range filepath.SplitList(list) {
			if !filepath.IsAbs(dir) {
				continue // "" and relative entries: exec.ErrDot
			}
			path := filepath.Join(dir, file)
			if executable(path) {
				return path, nil
			}
		}
	}
	return "", exec.ErrNotFound
}

// getenv returns the last value of key in env, as the child will see it.
func getenv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() &&
		unix.Faccessat(unix.AT_FDCWD, path, unix.X_OK, unix.AT_EACCESS) == nil
}

// capped keeps the first max bytes written to it and accepts, but drops,
// the rest.
type capped struct {
	buf  []byte
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	keep := p
	if room := c.max - len(c.buf); len(keep) > room {
		keep, c.over = keep[:room], true
	}
	c.buf = append(c.buf, keep...)
	return len(p), nil
}

// lines passes each line written to it to f, without its newline and cut
// to max bytes.
type lines struct {
	f    func([]byte)
	max  int
	buf  []byte // the current line, so far
	some bool   // the current line has begun (it may be empty so far)
}

func (l *lines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		line, rest, found := bytes.Cut(p, []byte{'\n'})
		if room := l.max - len(l.buf); len(line) > room {
			line = line[:room]
		}
		if !found {
			l.buf = append(l.buf, line...)
			l.some = true
			break
		}
		if len(l.buf) == 0 {
			l.f(line) // the whole line is in p: no copy
		} else {
			l.buf = append(l.buf, line...)
			l.f(l.buf)
		}
		l.buf, l.some, p = l.buf[:0], false, rest
	}
	return n, nil
}

// flush passes on a last line that has no newline.
func (l *lines) flush() {
	if l.some {
		l.f(l.buf)
		l.buf, l.some = l.buf[:0], false
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = t.buf[:copy(t.buf, t.buf[len(t.buf)-t.max:])]
	}
	return len(p), nil
}

func (t *tail) bytes() []byte {
	if len(t.buf) > t.max {
		return t.buf[len(t.buf)-t.max:]
	}
	return t.buf
}
