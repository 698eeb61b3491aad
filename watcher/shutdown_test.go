package watcher_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// TestShutdownWithinGrace: cancelled while the CLI works, the watcher lets
// it finish within Grace, posts its reply, then goes OFFLINE and returns.
func TestShutdownWithinGrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		release := make(chan struct{})
		r := &fakeRunner{reply: blockUntil(release)}
		cfg := config(root, r)
		cfg.Grace = waitLong
		h := start(t, cfg)
		m := send(t, root, agent, "a long job")
		waitFor(t, "the CLI to start", func() bool { return len(r.Calls()) == 1 })

		h.cancel()
		waitFor(t, "the watcher to notice the cancel", func() bool { return len(h.logs.find("stopping; waiting for the running CLI")) == 1 })
		// Past the next polls and beats, it still waits for the CLI, and it
		// takes nothing new.
		late := send(t, root, agent, "sent during shutdown")
		holds(t, 5*cfg.Heartbeat, "Run waits for the running CLI", func() bool {
			select {
			case <-h.exited:
				return false
			default:
				return true
			}
		})
		if s := readPresence(t, root, agent); s.State != presence.StateAwake {
			t.Errorf("presence while finishing = %s, want AWAKE until the CLI is done", s.State)
		}
		if err := r.Calls()[0].Ctx.Err(); err != nil {
			t.Errorf("the CLI's context is done (%v) within the grace period", err)
		}
		close(release)
		if err := h.stop(); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		msgs := messages(t, root)
		if n := len(repliesTo(msgs, m.ID)); n != 1 {
			t.Errorf("%d replies to the job that finished within the grace, want 1", n)
		}
		if n := len(r.callsFor(late.ID)); n != 0 {
			t.Errorf("a message sent during shutdown was run %d times", n)
		}
		if s := readPresence(t, root, agent); s.State != presence.StateOffline {
			t.Errorf("presence after Run = %s/%s, want OFFLINE", s.State, s.Substate)
		}
	})
}

// TestShutdownPastGrace: a CLI still running when Grace is over is
// cancelled through its context; Run then returns, OFFLINE.
func TestShutdownPastGrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		// This runner ignores the shutdown and ends only when its own context
		// is cancelled.
		r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
			<-c.Ctx.Done()
			return modelcli.Response{Stderr: "interrupted"}, c.Ctx.Err()
		}}
		cfg := config(root, r)
		cfg.Grace = 300 * time.Millisecond
		h := start(t, cfg)
		m := send(t, root, agent, "a job that will not end")
		waitFor(t, "the CLI to start", func() bool { return len(r.Calls()) == 1 })

		began := time.Now()
		h.cancel()
		call := r.Calls()[0]
		select {
		case <-call.Ctx.Done():
		case <-time.After(waitLong):
			t.Fatal("the CLI's context was not cancelled after the grace period")
		}
		if took := time.Since(began); took < cfg.Grace {
			t.Errorf("the CLI was cancelled after %v, before the %v grace period", took, cfg.Grace)
		}
		if !errors.Is(call.Ctx.Err(), context.Canceled) {
			t.Errorf("CLI context error = %v", call.Ctx.Err())
		}
		if err := h.stop(); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if s := readPresence(t, root, agent); s.State != presence.StateOffline {
			t.Errorf("presence after Run = %s/%s, want OFFLINE", s.State, s.Substate)
		}
		if n := len(repliesTo(messages(t, root), m.ID)); n != 0 {
			t.Errorf("%d replies to a killed job, want 0", n)
		}
		if c, err := readClaim(root, agent, m.ID); err != nil || c.Status == claim.Working {
			t.Errorf("claim after shutdown = %+v, %v; want it finished", c, err)
		}
		if len(h.logs.find("grace period over; stopping the CLI", "msg_id", m.ID)) != 1 {
			t.Errorf("no log line about the grace period")
		}
	})
}

// TestShutdownHurry: closing Hurry after the cancel cuts the grace short:
// the CLI is killed at once (cause proc.ErrKill, which proc turns into a
// SIGKILL of its whole group) and Run writes OFFLINE and returns.
func TestShutdownHurry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
			<-c.Ctx.Done()
			return modelcli.Response{}, context.Cause(c.Ctx)
		}}
		cfg := config(root, r)
		cfg.Grace = time.Hour
		hurry := make(chan struct{})
		cfg.Hurry = hurry
		h := start(t, cfg)
		m := send(t, root, agent, "a job that will not end")
		waitFor(t, "the CLI to start", func() bool { return len(r.Calls()) == 1 })

		h.cancel()
		waitFor(t, "the watcher to notice the cancel", func() bool { return len(h.logs.find("stopping; waiting for the running CLI")) == 1 })
		call := r.Calls()[0]
		if call.Ctx.Err() != nil {
			t.Fatal("the CLI was stopped before the grace period and before Hurry")
		}
		close(hurry)
		select {
		case <-h.exited:
		case <-time.After(waitLong):
			t.Fatal("Run did not return after Hurry")
		}
		if cause := context.Cause(call.Ctx); !errors.Is(cause, proc.ErrKill) {
			t.Errorf("CLI context cause = %v, want proc.ErrKill", cause)
		}
		if s := readPresence(t, root, agent); s.State != presence.StateOffline {
			t.Errorf("presence after Run = %s/%s, want OFFLINE", s.State, s.Substate)
		}
		if n := len(repliesTo(messages(t, root), m.ID)); n != 0 {
			t.Errorf("%d replies to a killed job, want 0", n)
		}
		if len(h.logs.find("told to hurry; killing the CLI", "msg_id", m.ID)) != 1 {
			t.Errorf("no log line about hurrying")
		}
	})
}

// TestShutdownIdle: an idle watcher returns at once and writes OFFLINE.
func TestShutdownIdle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		cfg := config(root, &fakeRunner{})
		cfg.Grace = 30 * time.Second
		h := start(t, cfg)
		began := time.Now()
		if err := h.stop(); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		// An idle watcher has no grace period to wait out; the bound (kept
		// from real time) is far below Grace.
		if took := time.Since(began); took > 5*time.Second {
			t.Errorf("an idle watcher took %v to stop", took)
		}
		if s := readPresence(t, root, agent); s.State != presence.StateOffline {
			t.Errorf("presence = %s, want OFFLINE", s.State)
		}
	})
}

// TestTwoWatchersOneHost: a watcher that finds another live watcher of its
// agent on its host in the presence file warns at start; stopping, it does
// not write OFFLINE while that one still runs, whoever wrote the presence
// last, and does once it is gone.
func TestTwoWatchersOneHost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		theirsLast  bool // the other's heartbeat is the last write before the stop
		otherExits  bool // the other watcher is gone before the stop
		wantOffline bool
	}{
		{"theirs last", true, false, false},
		{"own last, the other alive", false, false, false},
		{"own last, the other gone", false, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			other := exec.Command("sleep", "60") // the other watcher's process
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Process.Kill(); other.Wait() })
			pid := other.Process.Pid
			theirs := presence.Status{AgentID: agent, State: presence.StateAwake, Substate: presence.SubIdle,
				WatcherPID: pid, Channel: chName, Host: testHost}
			if err := presence.Write(root, theirs); err != nil {
				t.Fatal(err)
			}
			cfg := config(root, &fakeRunner{})
			cfg.Heartbeat = time.Hour // no heartbeat of its own between the other's and the stop
			h := start(t, cfg)
			if got := h.logs.find("another watcher of this agent is running on this host", "pid", strconv.Itoa(pid)); len(got) != 1 {
				t.Errorf("%d warnings about the other watcher, want 1", len(got))
			}
			if tt.theirsLast {
				if err := presence.Write(root, theirs); err != nil {
					t.Fatal(err)
				}
			}
			if tt.otherExits {
				other.Process.Kill()
				other.Wait()
			}
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			s := readPresence(t, root, agent)
			if got := s.State == presence.StateOffline; got != tt.wantOffline {
				t.Errorf("presence after the stop: %s by pid %d; OFFLINE %v, want %v", s.State, s.WatcherPID, got, tt.wantOffline)
			}
			if tt.theirsLast && s.WatcherPID != pid {
				t.Errorf("presence after the stop by pid %d, want the other watcher's %d", s.WatcherPID, pid)
			}
		})
	}
}
