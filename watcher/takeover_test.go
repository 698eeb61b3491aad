package watcher_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// TestCrashTakeover: a watcher process dies (SIGKILL) while its CLI runs.
// A new watcher on the same machine finds the message in the state file,
// takes the dead owner's claim over and answers it exactly once, honouring
// a reply token the dead watcher may have left.
func TestCrashTakeover(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		token bool // the dead watcher reserved reply R
		reply bool // and posted it
	}{
		{name: "no token"},
		{name: "token, reply not posted", token: true},
		{name: "token, reply posted", token: true, reply: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			m, dead := crashMidRun(t, root)

			replyID := channel.NewID(agent, time.Now(), "beef")
			if tt.token {
				s := &claim.Store{Root: root, Self: dead}
				got, fresh, err := s.ReserveReply(chName, m.ID, replyID)
				if err != nil || !fresh || got != replyID {
					t.Fatalf("ReserveReply = %q, %v, %v", got, fresh, err)
				}
			}
			if tt.reply {
				post(t, root, channel.Message{
					ID: replyID, From: agent, To: m.From, Content: channel.Content{Text: "posted before the crash"},
					Metadata: channel.Metadata{Mode: channel.ModeWatcher, InReplyTo: m.ID, Hops: 1, Thread: m.ID, Host: testHost},
				})
			}

			r := &fakeRunner{}
			h := start(t, config(root, r))
			c := waitClaim(t, root, agent, m.ID)
			waitSettled(t, root, agent)
			h.stop()

			rs := repliesTo(messages(t, root), m.ID)
			if len(rs) != 1 {
				t.Fatalf("%d replies after the takeover, want 1: %+v", len(rs), rs)
			}
			if tt.token && rs[0].ID != replyID {
				t.Errorf("reply id = %s, want %s, the id the reply token names", rs[0].ID, replyID)
			}
			wantRuns := 1
			if tt.reply {
				wantRuns = 0 // the reply is there to be read: no need to ask the model again
			}
			if n := len(r.Calls()); n != wantRuns {
				t.Errorf("CLI ran %d times, want %d", n, wantRuns)
			}
			if c.Status != claim.Replied || c.Reply != rs[0].ID {
				t.Errorf("claim = %s reply %q, want %s reply %q", c.Status, c.Reply, claim.Replied, rs[0].ID)
			}
			if c.Owner.Instance == dead.Instance {
				t.Errorf("the claim still belongs to the dead watcher")
			}
			if !tt.reply && c.Takeovers != 1 {
				t.Errorf("claim takeovers = %d, want 1", c.Takeovers)
			}
		})
	}
}

// crashMidRun runs a watcher in a child process, sends it a message, and
// kills it with SIGKILL while its CLI works on the message. It returns the
// message and the dead watcher's claim owner.
func crashMidRun(t *testing.T, root tree.Root) (channel.Message, claim.Owner) {
	t.Helper()
	child := startChild(t, root, "cancellable")
	pid := child.cmd.Process.Pid
	m := send(t, root, agent, "the child will die answering this")
	var c claim.Claim
	// Presence says WORKING as the CLI starts, written beside the run
	// (not before the claim and the state): wait for all three.
	waitFor(t, "the child to claim the message, save its state and say WORKING", func() bool {
		var err error
		c, err = readClaim(root, agent, m.ID)
		if err != nil || c.Status != claim.Working {
			return false
		}
		st, err := os.ReadFile(filepath.Join(root.State(agent), "watch.json"))
		return err == nil && strings.Contains(string(st), m.ID) &&
			readPresence(t, root, agent).Substate == presence.SubWorking
	})
	if c.Owner.PID != pid || c.Owner.Host != testHost {
		t.Fatalf("claim owner = %+v, want pid %d on %s", c.Owner, pid, testHost)
	}
	child.kill()
	if s := readPresence(t, root, agent); s.Substate != presence.SubWorking {
		t.Fatalf("presence of the dead watcher = %s/%s, want it left WORKING", s.State, s.Substate)
	}
	return m, c.Owner
}

// TestTwoWatchers: two watchers of one agent by mistake, on one root or on
// two hosts (two bindfs views of one folder): every message is answered
// exactly once, and the CLI runs once per message.
func TestTwoWatchers(t *testing.T) {
	t.Parallel()
	n := 50
	if testing.Short() {
		n = 20
	}
	t.Run("one root", func(t *testing.T) {
		t.Parallel()
		root := tree.Root(t.TempDir())
		twoWatchers(t, n, root, root, root, testHost, testHost)
	})
	t.Run("two hosts", func(t *testing.T) {
		t.Parallel()
		backing := t.TempDir()
		if err := os.MkdirAll(tree.Root(backing).Channel(chName), 0o755); err != nil {
			t.Fatal(err)
		}
		a := tree.Root(bindfstest.Mount(t, backing))
		b := tree.Root(bindfstest.Mount(t, backing))
		twoWatchers(t, n, tree.Root(backing), a, b, "host-a", "host-b")
	})
}

func twoWatchers(t *testing.T, n int, sender, rootA, rootB tree.Root, hostA, hostB string) {
	ra, rb := &fakeRunner{}, &fakeRunner{}
	cfgA, cfgB := config(rootA, ra), config(rootB, rb)
	cfgA.Host, cfgB.Host = hostA, hostB
	ha, hb := start(t, cfgA), start(t, cfgB)

	var sent []channel.Message
	for i := range n {
		sent = append(sent, send(t, sender, agent, fmt.Sprintf("message %d", i)))
	}
	waitReplies(t, sender, ids(sent...)...)
	// Once both have stopped nothing more can be posted: count then.
	ha.stop()
	hb.stop()

	msgs := messages(t, sender)
	for _, m := range sent {
		if rs := repliesTo(msgs, m.ID); len(rs) != 1 {
			t.Errorf("%q: %d replies, want 1", m.Content.Text, len(rs))
		}
		if runs := len(ra.callsFor(m.ID)) + len(rb.callsFor(m.ID)); runs != 1 {
			t.Errorf("%q: the CLI ran %d times, want 1", m.Content.Text, runs)
		}
	}
	t.Logf("%s answered %d, %s answered %d", hostA, len(ra.Calls()), hostB, len(rb.Calls()))
	if len(msgs) != 2*n {
		t.Errorf("%d messages in the channel, want %d (%d and their replies)", len(msgs), 2*n, n)
	}
}

// child is a watcher in a child process (helper mode "watcher").
type child struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{} // closed when it has exited
	kill   func()        // SIGKILL and wait
}

// startChild starts a child watcher on root and waits until it is awake.
// ctxKind is "background" or "cancellable" (see helperMain).
func startChild(t *testing.T, root tree.Root, ctxKind string) *child {
	t.Helper()
	args := helperArgs("watcher", string(root), testHost, ctxKind)
	c := &child{cmd: exec.Command(args[0], args[1:]...), stderr: &syncBuffer{}, exited: make(chan struct{})}
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.cmd.Wait()
		close(c.exited)
	}()
	c.kill = func() {
		c.cmd.Process.Kill()
		<-c.exited
	}
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("child watcher's log:\n%s", c.stderr)
		}
	})
	pid := c.cmd.Process.Pid
	waitFor(t, "the child watcher to start", func() bool {
		select {
		case <-c.exited:
			t.Fatalf("the child watcher exited before it was seen awake: %v; presence %+v", c.cmd.ProcessState, readPresence(t, root, agent))
		default:
		}
		s, err := presence.Read(root, agent)
		return err == nil && s.WatcherPID == pid && s.State == presence.StateAwake
	})
	return c
}

// TestRunBackgroundContext: Run runs until ctx is done, and a context
// that is never done (context.Background) has a nil Done channel: Run must
// keep running, not return at once.
func TestRunBackgroundContext(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	c := startChild(t, root, "background")
	holds(t, 10*20*time.Millisecond, "the child watcher runs", func() bool {
		select {
		case <-c.exited:
			t.Fatalf("watcher.Run(context.Background(), …) returned at once (%v); presence %+v", c.cmd.ProcessState, readPresence(t, root, agent))
		default:
		}
		return true
	})
	m := send(t, root, agent, "are you there?")
	waitFor(t, "the child to take the message, or exit", func() bool {
		select {
		case <-c.exited:
			return true
		default:
		}
		cl, err := readClaim(root, agent, m.ID)
		return err == nil && cl.Status == claim.Working
	})
	select {
	case <-c.exited:
		t.Fatalf("watcher.Run(context.Background(), …) returned at once (%v); presence %+v", c.cmd.ProcessState, readPresence(t, root, agent))
	default:
	}
}

// TestLongRunKeepsClaim: a CLI run longer than the claim grace is not
// taken over by a second watcher on another host while the first one
// keeps its claim's heartbeat fresh.
func TestLongRunKeepsClaim(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		slow := func(c runCall) (modelcli.Response, error) {
			select {
			case <-time.After(time.Second):
				return modelcli.Response{Text: "done"}, nil
			case <-c.Ctx.Done():
				return modelcli.Response{}, c.Ctx.Err()
			}
		}
		ra, rb := &fakeRunner{reply: slow}, &fakeRunner{reply: slow}
		cfgA, cfgB := config(root, ra), config(root, rb)
		cfgA.Host, cfgB.Host = "host-a", "host-b"
		cfgA.ClaimGrace, cfgB.ClaimGrace = 300*time.Millisecond, 300*time.Millisecond
		start(t, cfgA)
		start(t, cfgB)
		m := send(t, root, agent, "a long one")
		waitReplies(t, root, m.ID)
		c := waitClaim(t, root, agent, m.ID)
		if runs := len(ra.Calls()) + len(rb.Calls()); runs != 1 || c.Takeovers != 0 {
			t.Errorf("CLI ran %d times, claim taken over %d times; want 1 run, no takeover", runs, c.Takeovers)
		}
	})
}

// TestClaimLost: when another watcher takes the claim over mid-run (this
// one was judged gone), the watcher stops its CLI and posts nothing, not
// even an error reply: the new owner answers.
func TestClaimLost(t *testing.T) {
	t.Parallel()
	for _, postErrors := range []bool{false, true} {
		t.Run("PostErrors="+strconv.FormatBool(postErrors), func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
				<-c.Ctx.Done()
				return modelcli.Response{}, c.Ctx.Err()
			}}
			cfg := config(root, r)
			cfg.PostErrors = postErrors
			h := start(t, cfg)
			m := send(t, root, agent, "a question")
			waitFor(t, "the CLI to start", func() bool { return len(r.Calls()) == 1 })

			// Another host, whose clock says the claim is an hour old.
			thief := &claim.Store{Root: root, Grace: time.Second,
				Self: claim.Owner{Agent: agent, Host: "host-2", PID: 1, Instance: "thief"},
				Now:  func() time.Time { return time.Now().Add(time.Hour) }}
			if c, out, err := thief.Acquire(chName, m.ID); err != nil || out != claim.Acquired {
				t.Fatalf("takeover: %v %v %+v", out, err, c)
			}
			select {
			case <-r.Calls()[0].Ctx.Done():
			case <-time.After(waitLong):
				t.Fatal("the CLI was not stopped after its claim was taken over")
			}
			waitSettled(t, root, agent)
			if rs := repliesTo(messages(t, root), m.ID); len(rs) != 0 {
				t.Errorf("the watcher that lost the claim posted %+v", rs)
			}
			// The new owner's reply is the one.
			reply := channel.NewID(agent, time.Now(), "7777")
			if got, fresh, err := thief.ReserveReply(chName, m.ID, reply); err != nil || !fresh || got != reply {
				t.Errorf("the new owner's ReserveReply = %s, fresh %v, %v; want its own id", got, fresh, err)
			}
			if c, err := readClaim(root, agent, m.ID); err != nil || c.Owner.Instance != "thief" || c.Status != claim.Working {
				t.Errorf("claim after the loser finished = %+v, %v; want the new owner's, working", c, err)
			}
			if len(h.logs.find("claim taken over; stopping the CLI", "msg_id", m.ID)) != 1 {
				t.Errorf("no log line about the lost claim")
			}
		})
	}
}

// TestReplayEveryStart: a replay configured on every start (a service
// file with --replay-since) answers history once, not again at restart.
func TestReplayEveryStart(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	old := send(t, root, agent, "from before")
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.Replay = &watcher.Replay{From: time.Now().Add(-time.Hour)}
	for i := range 3 {
		h := start(t, cfg)
		live := send(t, root, agent, "run "+strconv.Itoa(i))
		waitReplies(t, root, old.ID, live.ID)
		waitSettled(t, root, agent)
		h.stop()
	}
	msgs := messages(t, root)
	for _, m := range msgs {
		if m.From != agent {
			if n := len(repliesTo(msgs, m.ID)); n != 1 {
				t.Errorf("%q: %d replies, want 1", m.Content.Text, n)
			}
		}
	}
	if n := len(r.callsFor(old.ID)); n != 1 {
		t.Errorf("the replayed message ran %d times, want 1", n)
	}
}
