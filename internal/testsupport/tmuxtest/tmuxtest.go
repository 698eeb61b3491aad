// Package tmuxtest runs an interactive program in a tmux session, for
// tests that use it as a person does: keys sent, the screen captured.
//
// Each [Session] has a tmux server of its own (a private socket under the
// test's TempDir), started with the environment given, so nothing is
// shared with the person's tmux or with other tests. A test is skipped
// without tmux, or fails when $COLLAB_TEST_REQUIRE_TMUX is "1".
package tmuxtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RequireEnv, when "1", turns a missing tmux into a test failure.
const RequireEnv = "COLLAB_TEST_REQUIRE_TMUX"

// Session is one tmux session running one program.
type Session struct {
	t    testing.TB
	sock string
	conf string
	name string
	env  []string
}

// Start runs argv in a new tmux session of 200×50 in dir, with env as its
// whole environment (less what says CI: InteractiveEnv); the session is
// killed when the test ends.
func Start(t testing.TB, dir string, env []string, argv ...string) *Session {
	t.Helper()
	env = InteractiveEnv(env)
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("tmux is required (%s=1): %v", RequireEnv, err)
		}
		t.Skip("no tmux")
	}
	tmp := t.TempDir()
	s := &Session{t: t, sock: filepath.Join(tmp, "tmux.sock"), conf: filepath.Join(tmp, "tmux.conf"), name: "test", env: env}
	// The pane stays when the program ends, so that its last words can be
	// read.
	if err := os.WriteFile(s.conf, []byte("set -g remain-on-exit on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"new-session", "-d", "-s", s.name, "-x", "200", "-y", "50", "-c", dir, "--"}, argv...)
	if out, err := s.tmux(args...); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	pid := 0
	if out, err := s.tmux("display-message", "-p", "-t", s.name, "#{pane_pid}"); err == nil {
		pid, _ = strconv.Atoi(strings.TrimSpace(out))
	}
	t.Cleanup(func() {
		// Closing the terminal: the program gets SIGHUP. Wait for it to
		// go, so that it writes nothing into folders being removed.
		s.tmux("kill-server")
		for deadline := time.Now().Add(15 * time.Second); pid > 0 && syscall.Kill(pid, 0) == nil && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	})
	return s
}

// InteractiveEnv is env less the variables by which a program tells it
// runs in CI (CI, CONTINUOUS_INTEGRATION, CI_*): Gemini CLI, seeing one,
// takes itself for non-interactive even on a terminal.
func InteractiveEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CI" || k == "CONTINUOUS_INTEGRATION" || strings.HasPrefix(k, "CI_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (s *Session) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", s.sock, "-f", s.conf}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Type types text, then Enter, as a person does (the text first, the
// Enter a moment later, as a TUI may take a fast Enter for a pasted line).
func (s *Session) Type(text string) {
	s.t.Helper()
	if out, err := s.tmux("send-keys", "-t", s.name, "-l", text); err != nil {
		s.t.Fatalf("tmux send-keys: %v: %s", err, out)
	}
	time.Sleep(300 * time.Millisecond)
	s.Keys("Enter")
}

// Keys sends tmux key names (Enter, C-c, Down, …).
func (s *Session) Keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", s.name}, keys...)...); err != nil {
		s.t.Fatalf("tmux send-keys: %v: %s", err, out)
	}
}

// Screen returns what the screen shows now ("" once the program ended).
func (s *Session) Screen() string {
	out, err := s.tmux("capture-pane", "-p", "-t", s.name)
	if err != nil {
		return ""
	}
	return out
}

// WaitFor waits, up to d, until the screen holds text, and returns it;
// the test fails with the screen if it never does.
func (s *Session) WaitFor(d time.Duration, text string) string {
	s.t.Helper()
	var screen string
	if !s.Until(d, func(sc string) bool { screen = sc; return strings.Contains(sc, text) }) {
		s.t.Fatalf("the screen did not show %q within %v:\n%s", text, d, screen)
	}
	return screen
}

// Until polls the screen until cond holds or d passes; it reports whether
// it held.
func (s *Session) Until(d time.Duration, cond func(screen string) bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		if cond(s.Screen()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Alive reports whether the session's program still runs.
func (s *Session) Alive() bool {
	out, err := s.tmux("display-message", "-p", "-t", s.name, "#{pane_dead}")
	return err == nil && strings.TrimSpace(out) == "0"
}
