// Package tmuxtest runs an interactive program in a tmux session, for
// tests (and the bench) that use it as a person does: keys sent, the
// screen captured.
//
// Each [Terminal] has a tmux server of its own (a private socket in a
// folder the caller gives), started with the environment given less what
// says CI ([InteractiveEnv]), so nothing is shared with the person's tmux
// or with other tests. [Start] is a Terminal for a test: skipped without
// tmux, or failed when $COLLAB_TEST_REQUIRE_TMUX is "1", and closed when
// the test ends.
package tmuxtest

import (
	"context"
	"fmt"
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

// Terminal is one tmux session of 200×50 running one program.
type Terminal struct {
	sock, conf, name string
	env              []string
	pid              int // the program's
}

// Open runs argv in a new Terminal in dir, with env as its whole
// environment less what says CI, its server's files in base (which must
// exist). The pane stays when the program ends, so that its last words
// can be read.
func Open(base, dir string, env []string, argv ...string) (*Terminal, error) {
	t := &Terminal{sock: filepath.Join(base, "tmux.sock"), conf: filepath.Join(base, "tmux.conf"), name: "term", env: InteractiveEnv(env)}
	if err := os.WriteFile(t.conf, []byte("set -g remain-on-exit on\n"), 0o600); err != nil {
		return nil, err
	}
	args := append([]string{"new-session", "-d", "-s", t.name, "-x", "200", "-y", "50", "-c", dir, "--"}, argv...)
	if out, err := t.tmux(args...); err != nil {
		return nil, fmt.Errorf("tmux new-session: %v: %s", err, out)
	}
	if out, err := t.tmux("display-message", "-p", "-t", t.name, "#{pane_pid}"); err == nil {
		t.pid, _ = strconv.Atoi(strings.TrimSpace(out))
	}
	return t, nil
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

func (t *Terminal) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", t.sock, "-f", t.conf}, args...)...)
	cmd.Env = t.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Type types text, then Enter, as a person does (the text first, the
// Enter a moment later, as a TUI may take a fast Enter for part of a
// paste).
func (t *Terminal) Type(text string) error {
	if out, err := t.tmux("send-keys", "-t", t.name, "-l", text); err != nil {
		return fmt.Errorf("tmux send-keys: %v: %s", err, out)
	}
	time.Sleep(300 * time.Millisecond)
	return t.Keys("Enter")
}

// Keys sends tmux key names (Enter, C-c, Down, …).
func (t *Terminal) Keys(keys ...string) error {
	if out, err := t.tmux(append([]string{"send-keys", "-t", t.name}, keys...)...); err != nil {
		return fmt.Errorf("tmux send-keys: %v: %s", err, out)
	}
	return nil
}

// Screen returns what the screen shows now ("" when it cannot be read).
func (t *Terminal) Screen() string {
	out, err := t.tmux("capture-pane", "-p", "-t", t.name)
	if err != nil {
		return ""
	}
	return out
}

// Until polls the screen until cond holds, d passes or ctx ends; it
// reports whether cond held, and the last screen.
func (t *Terminal) Until(ctx context.Context, d time.Duration, cond func(screen string) bool) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		screen := t.Screen()
		if cond(screen) {
			return true, screen
		}
		select {
		case <-ctx.Done():
			return false, screen
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitFor waits, up to d, until the screen holds text, and returns it.
func (t *Terminal) WaitFor(ctx context.Context, d time.Duration, text string) (string, error) {
	ok, screen := t.Until(ctx, d, func(s string) bool { return strings.Contains(s, text) })
	if !ok {
		return screen, fmt.Errorf("the screen did not show %q within %v:\n%s", text, d, screen)
	}
	return screen, nil
}

// Alive reports whether the program still runs.
func (t *Terminal) Alive() bool {
	out, err := t.tmux("display-message", "-p", "-t", t.name, "#{pane_dead}")
	return err == nil && strings.TrimSpace(out) == "0"
}

// Close closes the terminal, as a person closing it: the program gets
// SIGHUP. It waits (15 s at most) for the program to go, so that it
// writes nothing into folders about to be removed.
func (t *Terminal) Close() {
	t.tmux("kill-server")
	for deadline := time.Now().Add(15 * time.Second); t.pid > 0 && syscall.Kill(t.pid, 0) == nil && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// Session is a Terminal of a test: its failures fail the test.
type Session struct {
	*Terminal
	t testing.TB
}

// Start opens a Terminal for the test, closed when the test ends.
func Start(t testing.TB, dir string, env []string, argv ...string) *Session {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("tmux is required (%s=1): %v", RequireEnv, err)
		}
		t.Skip("no tmux")
	}
	term, err := Open(t.TempDir(), dir, env, argv...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(term.Close)
	return &Session{Terminal: term, t: t}
}

// Type types text and Enter; see Terminal.Type.
func (s *Session) Type(text string) {
	s.t.Helper()
	if err := s.Terminal.Type(text); err != nil {
		s.t.Fatal(err)
	}
}

// WaitFor waits, up to d, until the screen holds text, and returns it;
// the test fails with the screen if it never does.
func (s *Session) WaitFor(d time.Duration, text string) string {
	s.t.Helper()
	screen, err := s.Terminal.WaitFor(context.Background(), d, text)
	if err != nil {
		s.t.Fatal(err)
	}
	return screen
}

// Until polls the screen until cond holds or d passes; it reports
// whether it held.
func (s *Session) Until(d time.Duration, cond func(screen string) bool) bool {
	ok, _ := s.Terminal.Until(context.Background(), d, cond)
	return ok
}
