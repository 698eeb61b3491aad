package service

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/presence"
)

// zombiePID starts a child that exits at once and leaves it unreaped
// (a zombie) until the test ends.
func zombiePID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Wait() })
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			return cmd.Process.Pid
		}
		if err != unix.EINTR {
			t.Fatal(err)
		}
	}
}

// TestZombieIsDeadEverywhere: a delegated agent whose watcher is a zombie
// (exited, not reaped) is dead alike in who, delegate ls and ls.
func TestZombieIsDeadEverywhere(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("zombies are seen through /proc")
	}
	e := newDelegationsEnv(t)
	pid := zombiePID(t)
	s := &sessions.Session{ID: "ab12", Agent: sessions.AgentID("human", "ab12"), DelegatedBy: "human", Depth: 1,
		Repo: e.repo, Worktree: t.TempDir(), Branch: "b", Base: "main", Channel: sessions.Channel("ab12"),
		CLI: "command", Host: "here", PID: pid, Created: time.Now().UTC(), Status: sessions.Running}
	if err := sessions.Create(e.root, s); err != nil {
		t.Fatal(err)
	}
	if err := presence.Write(e.root, presence.Status{AgentID: s.Agent, State: presence.StateAwake,
		Timestamp: presence.FormatTime(time.Now()), WatcherPID: pid, Host: "here"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rows, err := e.m.Who(ctx, WhoRequest{Names: []string{s.Agent}})
	if err != nil || len(rows) != 1 {
		t.Fatalf("who: %+v, %v", rows, err)
	}
	if presence.IsAwake(rows[0].State) {
		t.Errorf("who: %s is %s with a zombie watcher", s.Agent, rows[0].State)
	}
	list, err := e.m.Sessions(ctx, SessionsQuery{})
	if err != nil || len(list) != 1 {
		t.Fatalf("delegate ls: %+v, %v", list, err)
	}
	if presence.IsAwake(list[0].State) {
		t.Errorf("delegate ls: %s is %s with a zombie watcher", s.Agent, list[0].State)
	}
	inst, err := e.m.Instances(ctx)
	if err != nil || len(inst) != 1 {
		t.Fatalf("ls: %+v, %v", inst, err)
	}
	if inst[0].Status != workflow.Dead {
		t.Errorf("ls: session %s is %s with a zombie watcher, want %s", s.ID, inst[0].Status, workflow.Dead)
	}
}
