package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
	"github.com/collabdev/collab/presence"
)

// The test binary plays two other programs, chosen by $COLLAB_TEST_AS:
// "collab" runs main (a real collab process to signal and kill), and "cli"
// is a fake model CLI.
func TestMain(m *testing.M) {
	// A model CLI of a watch --mcp starts the watcher's binary, this one,
	// as `collab mcp` (Codex with none of our variables).
	if len(os.Args) > 1 && os.Args[1] == "mcp" {
		main()
	}
	switch os.Getenv("COLLAB_TEST_AS") {
	case "collab":
		// The CLI this watcher runs is the test binary again, as "cli".
		os.Setenv("COLLAB_TEST_AS", "cli")
		main()
	case "cli":
		fakeCLI()
	default:
		os.Exit(m.Run())
	}
}

// fakeCLI answers "ok MESSAGE-ID". $FAKE_CLI_STARTED names a folder where
// it first records its PID; $FAKE_CLI_SLEEP makes it slow.
func fakeCLI() {
	if os.Getenv("FAKE_CLI_DELEGATE") != "" {
		delegatingCLI()
	}
	if os.Getenv("FAKE_CLI_COMMIT") != "" {
		committingCLI()
	}
	if os.Getenv("FAKE_CLI_NEST") != "" {
		nestingCLI()
	}
	io.Copy(io.Discard, os.Stdin)
	// $FAKE_CLI_DEAD: a process that must be gone before this run.
	if pid, err := strconv.Atoi(os.Getenv("FAKE_CLI_DEAD")); err == nil && proc.PIDAlive(pid) && !isZombie(pid) {
		fmt.Fprintln(os.Stderr, "process", pid, "of the previous run is still alive")
		os.Exit(1)
	}
	if dir := os.Getenv("FAKE_CLI_STARTED"); dir != "" {
		if os.Getenv("FAKE_CLI_SPAWN") != "" {
			// A tool of the CLI's, in its process group.
			child := exec.Command("sleep", "300")
			if err := child.Start(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.WriteFile(filepath.Join(dir, fmt.Sprint("child-", child.Process.Pid)), nil, 0o666)
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprint(os.Getpid())), nil, 0o666)
	}
	if d, err := time.ParseDuration(os.Getenv("FAKE_CLI_SLEEP")); err == nil {
		time.Sleep(d)
	}
	fmt.Println("ok", os.Getenv("COLLAB_MESSAGE_ID"))
	os.Exit(0)
}

// watcherProc is a collab watch process.
type watcherProc struct {
	cmd    *exec.Cmd
	stderr syncBuffer
	done   chan error
}

// startWatcher runs `collab watch` for agent on channel c in root, with the
// fake CLI; env adds variables for the CLI, flags more flags.
func startWatcher(t *testing.T, root, agent, c string, env []string, flags ...string) *watcherProc {
	t.Helper()
	return startWatch(t, os.Args[0], root, agent, env, append([]string{"--channel", c, "--cli", "command", "--cmd", os.Args[0]}, flags...)...)
}

// startWatch runs bin (the test binary or a copy) as `collab watch` for
// agent in root with args, and waits until its presence says it is awake;
// env adds variables (a later one wins).
func startWatch(t *testing.T, bin, root, agent string, env []string, args ...string) *watcherProc {
	t.Helper()
	return launchWatch(t, bin, tree.Root(root), agent, env, append([]string{"--root", root, "--agent", agent}, args...)...)
}

// launchWatch runs bin as `collab watch` with args (after fast poll,
// heartbeat and grace settings) and env, and waits until agent's presence
// in presenceIn says this process is awake.
func launchWatch(t *testing.T, bin string, presenceIn tree.Root, agent string, env []string, args ...string) *watcherProc {
	t.Helper()
	cmd := exec.Command(bin, append(watchFast(), args...)...)
	cmd.Env = append(os.Environ(), append([]string{"COLLAB_TEST_AS=collab", "GORACE=atexit_sleep_ms=0"}, env...)...)
	return startWatchCmd(t, cmd, presenceIn, agent)
}

// watchFast is `watch` with the fast poll, heartbeat and grace settings
// of these tests.
func watchFast() []string {
	return []string{"watch", "--poll", "100ms", "--heartbeat", "1s", "--grace", "2s"}
}

// startWatchCmd starts cmd, a collab watch for agent, and waits until agent's
// presence in presenceIn says this process is awake.
func startWatchCmd(t *testing.T, cmd *exec.Cmd, presenceIn tree.Root, agent string) *watcherProc {
	t.Helper()
	w := &watcherProc{cmd: cmd, done: make(chan error, 1)}
	w.cmd.Stderr = &w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.done <- w.cmd.Wait() }()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.done
		if t.Failed() {
			t.Logf("watcher %s log:\n%s", agent, w.stderr.String())
		}
	})
	waitFor(t, func() bool {
		s, err := presence.Read(presenceIn, agent)
		return err == nil && s.State == presence.StateAwake && s.WatcherPID == w.cmd.Process.Pid
	})
	return w
}

// stop sends sig and waits for the process to end.
func (w *watcherProc) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	w.cmd.Process.Signal(sig)
	select {
	case err := <-w.done:
		w.done <- err // for the clean-up
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("watcher did not exit after %v", sig)
		return nil
	}
}

// replies returns the replies in channel c, by the message they answer.
func replies(t *testing.T, root, c, from string) map[string][]string {
	t.Helper()
	msgs, _, err := channel.ReadAll(tree.Root(root), c, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]string)
	for _, m := range msgs {
		if m.From == from && m.Metadata.InReplyTo != "" && !m.IsDeliveryReport() {
			out[m.Metadata.InReplyTo] = append(out[m.Metadata.InReplyTo], m.ID)
		}
	}
	return out
}

func send(t *testing.T, root, c, from, to, text string) string {
	t.Helper()
	return post(t, root, c, from, to, text, time.Now()).ID
}

func TestWatchProcessReplyAndSIGTERM(t *testing.T) {
	root := newTree(t)
	w := startWatcher(t, root, "codex", "dev", nil)
	id := send(t, root, "dev", "human", "codex", "hello")
	waitFor(t, func() bool { return len(replies(t, root, "dev", "codex")[id]) == 1 })
	m, err := channel.Lookup(tree.Root(root), "dev", replies(t, root, "dev", "codex")[id][0])
	if err != nil {
		t.Fatal(err)
	}
	if m.Content.Text != "ok "+id || m.To != "human" || m.Metadata.Mode != "watcher" || m.Metadata.Hops != 1 {
		t.Errorf("reply = %q to %s, metadata %+v", m.Content.Text, m.To, m.Metadata)
	}
	if err := w.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	s, err := presence.Read(tree.Root(root), "codex")
	if err != nil || s.State != presence.StateOffline {
		t.Errorf("presence after SIGTERM = %+v, %v; want OFFLINE", s, err)
	}
	if !strings.Contains(w.stderr.String(), "replied") {
		t.Errorf("log has no reply line:\n%s", w.stderr.String())
	}
	logFile, err := os.ReadFile(filepath.Join(root, "logs", "codex.log"))
	if err != nil || !bytes.Contains(logFile, []byte(`"msg":"replied"`)) {
		t.Errorf("JSON log lacks the reply: %v\n%s", err, logFile)
	}
}

func TestWatchProcessRestartAnswersBacklogOnce(t *testing.T) {
	t.Parallel() // mostly waiting on other processes and mounts
	root := newTree(t)
	w := startWatcher(t, root, "codex", "dev", nil)
	first := send(t, root, "dev", "human", "codex", "before the stop")
	waitFor(t, func() bool { return len(replies(t, root, "dev", "codex")[first]) == 1 })
	w.stop(t, syscall.SIGTERM)

	var ids []string
	for i := range 3 {
		ids = append(ids, send(t, root, "dev", "human", "codex", fmt.Sprint("while down ", i)))
	}
	startWatcher(t, root, "codex", "dev", nil)
	waitFor(t, func() bool { return len(replies(t, root, "dev", "codex")) == 4 })
	time.Sleep(500 * time.Millisecond) // room for a duplicate to show up
	got := replies(t, root, "dev", "codex")
	for _, id := range append(ids, first) {
		if len(got[id]) != 1 {
			t.Errorf("%s has %d replies, want 1", id, len(got[id]))
		}
	}
}

func TestWatchProcessSIGKILLDuringSlowCLI(t *testing.T) {
	t.Parallel() // mostly waiting on other processes and mounts
	root := newTree(t)
	started := t.TempDir()
	w := startWatcher(t, root, "codex", "dev", []string{"FAKE_CLI_STARTED=" + started, "FAKE_CLI_SLEEP=30s"})
	id := send(t, root, "dev", "human", "codex", "take your time")
	var cliPID int
	waitFor(t, func() bool {
		ents, _ := os.ReadDir(started)
		if len(ents) == 0 {
			return false
		}
		fmt.Sscan(ents[0].Name(), &cliPID)
		return true
	})
	// The watcher's loop records the job as the CLI starts, on another
	// goroutine: wait for the record before the kill.
	waitFor(t, func() bool {
		list, _ := jobs.List(tree.Root(root), "codex")
		return len(list) == 1 && list[0].Status == jobs.Running
	})
	w.stop(t, syscall.SIGKILL)
	// The kernel kills the orphaned CLI (parent-death signal).
	waitFor(t, func() bool { return !proc.PIDAlive(cliPID) || isZombie(cliPID) })

	// Its job does not say running for ever: the watcher's pid is dead on
	// this host, so every reader shows the job interrupted, and the
	// message's status says so.
	env := map[string]string{"COLLAB_ROOT": root}
	if r := runCollab(t, env, "", "jobs", "show", id, "--json"); r.code != 0 || !strings.Contains(r.stdout, `"status": "interrupted"`) {
		t.Errorf("jobs show after the SIGKILL: exit %d, %s %s; want interrupted", r.code, r.stdout, r.stderr)
	}
	if r := runCollab(t, env, "", "status", id, "--channel", "dev"); r.code != 0 || !strings.Contains(r.stdout, "interrupted") {
		t.Errorf("status after the SIGKILL: exit %d, %s %s; want the job interrupted", r.code, r.stdout, r.stderr)
	}

	startWatcher(t, root, "codex", "dev", nil) // fast CLI now
	waitFor(t, func() bool { return len(replies(t, root, "dev", "codex")[id]) >= 1 })
	time.Sleep(500 * time.Millisecond)
	if n := len(replies(t, root, "dev", "codex")[id]); n != 1 {
		t.Errorf("%d replies after the crash and restart, want 1", n)
	}
}

// TestWatchProcessSIGKILLEndsLeftovers: the CLI's own children outlive a
// SIGKILLed watcher (only the direct child gets the parent-death signal);
// the job record holds the CLI's process group, and the restarted watcher
// ends that group before it runs the message again.
func TestWatchProcessSIGKILLEndsLeftovers(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	root := newTree(t)
	started := t.TempDir()
	w := startWatcher(t, root, "codex", "dev", []string{"FAKE_CLI_STARTED=" + started, "FAKE_CLI_SLEEP=5m", "FAKE_CLI_SPAWN=1"})
	id := send(t, root, "dev", "human", "codex", "take your time")
	var cliPID, childPID int
	waitFor(t, func() bool {
		ents, _ := os.ReadDir(started)
		for _, e := range ents {
			if n, ok := strings.CutPrefix(e.Name(), "child-"); ok {
				childPID, _ = strconv.Atoi(n)
			} else {
				cliPID, _ = strconv.Atoi(e.Name())
			}
		}
		return cliPID > 0 && childPID > 0
	})
	t.Cleanup(func() { syscall.Kill(childPID, syscall.SIGKILL) })
	// The record holds the CLI's pid (its group's id) once it has started.
	waitFor(t, func() bool {
		j, err := jobs.Read(tree.Root(root), "codex", jobOf(root, "codex", id))
		return err == nil && j.PID == cliPID && j.Boot != ""
	})
	w.stop(t, syscall.SIGKILL)
	waitFor(t, func() bool { return !proc.PIDAlive(cliPID) || isZombie(cliPID) })
	if !proc.PIDAlive(childPID) || isZombie(childPID) {
		t.Fatal("the CLI's child died with the watcher; the test shows nothing")
	}

	// The new run fails if the old run's child is still alive as it starts.
	startWatcher(t, root, "codex", "dev", []string{"FAKE_CLI_DEAD=" + strconv.Itoa(childPID)})
	waitFor(t, func() bool { return len(replies(t, root, "dev", "codex")[id]) >= 1 })
	if proc.PIDAlive(childPID) && !isZombie(childPID) {
		t.Errorf("the previous run's child %d is still alive after the restart", childPID)
	}
}

// TestWatchProcessSecondSignal: the first SIGTERM waits for the CLI (up to
// --grace); a second one kills the CLI's whole process group at once,
// grandchildren included, and the watcher still writes OFFLINE.
func TestWatchProcessSecondSignal(t *testing.T) {
	root := newTree(t)
	started := t.TempDir()
	w := startWatcher(t, root, "codex", "dev", []string{"FAKE_CLI_STARTED=" + started, "FAKE_CLI_SLEEP=5m", "FAKE_CLI_SPAWN=1"}, "--grace", "5m")
	send(t, root, "dev", "human", "codex", "take your time")
	var cliPID, childPID int
	waitFor(t, func() bool {
		ents, _ := os.ReadDir(started)
		for _, e := range ents {
			if _, err := fmt.Sscanf(e.Name(), "child-%d", &childPID); err != nil {
				fmt.Sscan(e.Name(), &cliPID)
			}
		}
		return cliPID != 0 && childPID != 0
	})
	t.Cleanup(func() { syscall.Kill(childPID, syscall.SIGKILL) })

	w.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, func() bool { return strings.Contains(w.stderr.String(), "stopping; waiting for the running CLI") })
	if !proc.PIDAlive(cliPID) {
		t.Fatal("the CLI was stopped by the first signal, before the grace period")
	}
	began := time.Now()
	if err := w.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("exit after the second signal: %v", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the watcher took %v to exit after the second signal", took)
	}
	for _, pid := range []int{cliPID, childPID} {
		waitFor(t, func() bool { return !proc.PIDAlive(pid) || isZombie(pid) })
	}
	s, err := presence.Read(tree.Root(root), "codex")
	if err != nil || s.State != presence.StateOffline {
		t.Errorf("presence after the second signal = %+v, %v; want OFFLINE", s, err)
	}
}

func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// Two watchers of one agent on two "hosts" (bindfs mounts of one folder),
// started by mistake: every message sent from a third mount is answered
// exactly once. (Latency across mounts is measured by collab-bench.)
func TestWatchProcessTwoMountsOneAgent(t *testing.T) {
	t.Parallel() // mostly waiting on other processes and mounts
	backing := newTree(t)
	a := bindfstest.Mount(t, backing)
	b := bindfstest.Mount(t, backing)
	c := bindfstest.Mount(t, backing)
	startWatcher(t, a, "codex", "dev", nil, "--rate", "1000")
	startWatcher(t, b, "codex", "dev", nil, "--rate", "1000")

	first := send(t, c, "dev", "human", "codex", "first")
	waitFor(t, func() bool { return len(replies(t, c, "dev", "codex")[first]) == 1 })

	n := 50
	if testing.Short() {
		n = 10
	}
	ids := []string{first}
	for i := range n - 1 {
		ids = append(ids, send(t, c, "dev", "human", "codex", fmt.Sprint("message ", i)))
	}
	waitFor(t, func() bool { return len(replies(t, c, "dev", "codex")) == n })
	time.Sleep(time.Second)
	got := replies(t, backing, "dev", "codex")
	for _, id := range ids {
		if len(got[id]) != 1 {
			t.Errorf("%s has %d replies, want 1", id, len(got[id]))
		}
	}
}

// TestWatchBadNames: a name that breaks docs/protocol.md#the-shared-tree, from a flag or the
// environment, exits 2 with a clear message before anything is created.
func TestWatchBadNames(t *testing.T) {
	base := []string{"--cli", "command", "--cmd", "cat"}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"agent dotdot", nil, []string{"--agent", "../x", "--channel", "dev"}, "agent name"},
		{"agent slash", nil, []string{"--agent", "a/b", "--channel", "dev"}, "agent name"},
		{"no agent", nil, []string{"--channel", "dev"}, "agent"},
		{"channel dotdot", nil, []string{"--agent", "codex", "--channel", ".."}, "channel name"},
		{"channel slash", nil, []string{"--agent", "codex", "--channel", "a/b"}, "channel name"},
		{"empty channel", nil, []string{"--agent", "codex", "--channel", ""}, "channel"},
		{"second channel bad", nil, []string{"--agent", "codex", "--channel", "dev", "--channel", "../x"}, "channel name"},
		{"env channel list", map[string]string{"COLLAB_CHANNEL": "dev,../x"}, []string{"--agent", "codex"}, "channel name"},
		{"env agent", map[string]string{"COLLAB_AGENT": "../x"}, []string{"--channel", "dev"}, "agent name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			env := map[string]string{"COLLAB_ROOT": root}
			for k, v := range tt.env {
				env[k] = v
			}
			r := runCollab(t, env, "", append(append([]string{"watch"}, tt.args...), base...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tt.want)
			}
			if files := filesUnder(t, root); len(files) > 0 {
				t.Errorf("created %v", files)
			}
		})
	}
}

// TestWatchBadDurations: a poll or heartbeat below the minimum (one that
// would burn a core or rewrite presence nonstop) is a usage error.
func TestWatchBadDurations(t *testing.T) {
	base := []string{"watch", "--agent", "codex", "--channel", "dev", "--cli", "command", "--cmd", os.Args[0]}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"poll 1ns", []string{"--poll", "1ns"}, "--poll"},
		{"poll 0", []string{"--poll", "0"}, "--poll"},
		{"poll below 10ms", []string{"--poll", "9ms"}, "--poll"},
		{"heartbeat 1ns", []string{"--heartbeat", "1ns"}, "--heartbeat"},
		{"heartbeat below 1s", []string{"--heartbeat", "999ms"}, "--heartbeat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			// Accepted, the watcher would run: the deadline ends it.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			r := runCollabCtx(t, ctx, map[string]string{"COLLAB_ROOT": root}, "", append(base, tt.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "minimum") {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tt.want)
			}
			if files := filesUnder(t, root); len(files) > 0 {
				t.Errorf("created %v", files)
			}
		})
	}
}

// TestWatchNotRunnable: a program that cannot be found and a --workdir that
// is not a directory are refused at start (exit 2), each named, instead of
// a watcher that fails every message.
func TestWatchNotRunnable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	base := []string{"watch", "--agent", "codex", "--channel", "dev"}
	tests := []struct {
		name      string
		args      []string
		want, not string
	}{
		{"command missing", []string{"--cli", "command", "--cmd", missing + " --flag"}, "program", "workdir"},
		{"command not on PATH", []string{"--cli", "command", "--cmd", "collab-no-such-cli"}, "collab-no-such-cli", "workdir"},
		{"adapter missing", []string{"--cli", "gemini", "--cmd", "collab-no-such-gemini"}, "collab-no-such-gemini", "workdir"},
		{"relative in workdir", []string{"--cli", "command", "--cmd", "./bin/cli", "--workdir", dir}, "./bin/cli", "--workdir"},
		{"workdir missing", []string{"--cli", "command", "--cmd", os.Args[0], "--workdir", missing}, "--workdir " + missing, "program"},
		{"workdir a file", []string{"--cli", "command", "--cmd", os.Args[0], "--workdir", file}, "not a directory", "program"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			// Accepted, the watcher would run: the deadline ends it.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			r := runCollabCtx(t, ctx, map[string]string{"COLLAB_ROOT": root}, "", append(base, tt.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stderr, tt.not) {
				t.Errorf("exit %d, stderr %q; want 2, %q and no %q", r.code, r.stderr, tt.want, tt.not)
			}
			if files := filesUnder(t, root); len(files) > 0 {
				t.Errorf("created %v", files)
			}
		})
	}
}

// TestWatchMCPNeedsCLI: watch --mcp with a CLI that takes no MCP servers
// is a usage error.
func TestWatchMCPNeedsCLI(t *testing.T) {
	r := runCollab(t, map[string]string{"COLLAB_ROOT": newTree(t)}, "", "watch", "--agent", "a", "--channel", "dev", "--cli", "command", "--cmd", "cat", "--mcp")
	if r.code != 2 || !strings.Contains(r.stderr, "--mcp needs --cli claude or codex") {
		t.Errorf("watch --cli command --mcp: exit %d %q", r.code, r.stderr)
	}
}
