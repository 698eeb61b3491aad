package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// CLI is one model CLI's way into a live session.
type CLI interface {
	// Name is the CLI's name: claude, codex or gemini.
	Name() string
	// Command is the CLI to run in the person's terminal for s: its
	// settings for this run only written under s's private folder, the
	// hooks (Hook, as exe join-hook) reaching the socket at sock, the MCP
	// server mcp.
	Command(s *Session, sock string, mcp MCP) (*exec.Cmd, error)
	// Model is the "type" of the model's lines in the CLI's transcript.
	Model() []string
	// Serve delivers to the CLI for the session's life when its way in is
	// not the hooks (Codex: its app-server); the others return at once.
	Serve(ctx context.Context, s *Session)
}

// ForCLI returns the way in of the CLI named name (claude, codex,
// gemini), which runs with the person's own args.
func ForCLI(name string, args []string) (CLI, error) {
	switch name {
	case "claude":
		return &Claude{Args: args}, nil
	case "codex":
		return &Codex{Args: args}, nil
	case "gemini":
		return &Gemini{Args: args}, nil
	}
	return nil, fmt.Errorf("unknown CLI %q; use claude, codex or gemini", name)
}

// MCP is the collab MCP server the session answers with: Exe's
// `mcp --agent A --root ROOT --channel C`, signing as A.
type MCP struct {
	Exe  string
	Args []string
}

// Stdio is the person's terminal.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// ExitError is the error of a CLI that exited with a status other than 0.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return "the CLI exited with status " + strconv.Itoa(e.Code) }

// stopGrace is how long the CLI has between SIGTERM and SIGKILL when the
// join is stopped.
const stopGrace = 5 * time.Second

// Run runs cli in the person's terminal as cfg.Agent, with the delivery
// loop, until the CLI exits (its status other than 0 is an *ExitError) or
// ctx ends (the CLI is then ended).
func Run(ctx context.Context, cfg Config, cli CLI, stdio Stdio) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	exe := cfg.Exe
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	defer os.RemoveAll(cfg.Dir)
	s, err := newSession(cfg, cli.Name())
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	l, sock, err := s.listen()
	if err != nil {
		return err
	}
	defer l.Close()
	root, err := filepath.Abs(string(cfg.Root))
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	cmd, err := cli.Command(s, sock, MCP{Exe: exe, Args: []string{"mcp", "--agent", cfg.Agent, "--root", root, "--channel", cfg.Channels[0]}})
	if c, ok := cli.(io.Closer); ok {
		defer c.Close() // what Command started (Codex's app-server)
	}
	if err != nil {
		return err
	}
	cmd.Env = append(cmd.Env, SocketEnv+"="+sock)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err

	lctx, stop := context.WithCancel(context.Background())
	defer stop()
	go s.serveHooks(lctx, l, cli.Model())
	looped := make(chan struct{})
	go func() {
		defer close(looped)
		s.run(lctx)
	}()
	defer func() { stop(); <-looped }()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("join: start %s: %w", cli.Name(), err)
	}
	cfg.Logger.Info("joined", "agent", cfg.Agent, "cli", cli.Name(), "pid", cmd.Process.Pid, "channels", cfg.Channels)
	served := make(chan struct{})
	go func() {
		defer close(served)
		cli.Serve(lctx, s)
	}()
	defer func() { stop(); <-served }()
	return wait(ctx, cmd)
}

// wait waits for cmd; when ctx ends first, cmd gets SIGTERM, then
// SIGKILL a grace later.
func wait(ctx context.Context, cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-done:
		case <-time.After(stopGrace):
			cmd.Process.Kill()
			err = <-done
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &ExitError{Code: ee.ExitCode()}
	}
	return err
}
