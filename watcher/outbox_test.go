package watcher_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/tmpfs"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// flakyDisk writes messages like a channel.Writer, except that while full
// is set every write fails with ENOSPC, and the first landFail writes land
// in the channel but report ENOSPC (an NFS reply lost after the write).
type flakyDisk struct {
	root     tree.Root
	full     atomic.Bool
	landFail atomic.Int64
	fails    atomic.Int64

	mu    sync.Mutex
	tried []channel.Message // every message it was asked to write
}

func (d *flakyDisk) write(m *channel.Message) error {
	d.mu.Lock()
	d.tried = append(d.tried, *m)
	d.mu.Unlock()
	enospc := &fs.PathError{Op: "write", Path: ".tmp", Err: syscall.ENOSPC}
	if d.full.Load() {
		d.fails.Add(1)
		return enospc
	}
	if err := (&channel.Writer{Root: d.root}).Post(m); err != nil {
		return err
	}
	if d.landFail.Add(-1) >= 0 {
		d.fails.Add(1)
		return enospc
	}
	return nil
}

func (d *flakyDisk) attempts() []channel.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.tried)
}

// outboxFiles returns the names in the agent's outbox.
func outboxFiles(t testing.TB, root tree.Root) []string {
	t.Helper()
	ents, err := os.ReadDir(root.Outbox(agent))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") { // the reserve, temp files
			names = append(names, e.Name())
		}
	}
	return names
}

// checkOnce checks that each message got exactly one reply and one CLI run.
func checkOnce(t *testing.T, root tree.Root, r *fakeRunner, msgs ...channel.Message) {
	t.Helper()
	all := messages(t, root)
	for _, m := range msgs {
		if n, runs := len(repliesTo(all, m.ID)), len(r.callsFor(m.ID)); n != 1 || runs != 1 {
			t.Errorf("%q: %d replies, %d CLI runs, want 1 and 1", m.Content.Text, n, runs)
		}
	}
}

// TestOutboxFullDisk: a reply that cannot be posted (ENOSPC) waits in the
// outbox, on disk, is retried, and is posted once when space returns; a
// write that landed but reported ENOSPC is not posted twice (scenario 4).
func TestOutboxFullDisk(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		full     bool  // ENOSPC until the test frees space
		landFail int64 // writes that land but report ENOSPC
	}{
		{name: "no space, then space", full: true},
		{name: "written but reported failed", landFail: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			r := &fakeRunner{}
			cfg := config(root, r)
			disk := &flakyDisk{root: root}
			disk.full.Store(tt.full)
			disk.landFail.Store(tt.landFail)
			watcher.SetWriteMessage(&cfg, disk.write)
			h := start(t, cfg)

			m := send(t, root, agent, "answer me")
			waitFor(t, "the reply to go to the outbox", func() bool {
				return len(h.logs.find("cannot post the reply; kept in the outbox and retried", "msg_id", m.ID)) == 1
			})
			if tt.full {
				if got := outboxFiles(t, root); len(got) != 1 || got[0] != chName+"."+m.ID+".json" {
					t.Errorf("outbox = %q, want the reply's entry", got)
				}
				waitFor(t, "retries", func() bool { return disk.fails.Load() >= 3 })
				waitFor(t, "presence to count the outbox", func() bool {
					return readPresence(t, root, agent).Counters["outbox"] == 1
				})
				if n := len(repliesTo(messages(t, root), m.ID)); n != 0 {
					t.Fatalf("%d replies visible while the disk is full", n)
				}
				disk.full.Store(false)
			}
			msgs := waitReplies(t, root, m.ID)
			waitFor(t, "the outbox to empty", func() bool { return len(outboxFiles(t, root)) == 0 })
			waitSettled(t, root, agent)
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			checkOnce(t, root, r, m)
			reply := repliesTo(msgs, m.ID)[0]
			if reply.Content.Text != "reply to "+m.ID || reply.To != "alice" {
				t.Errorf("reply = %q to %q, want the CLI's answer to alice", reply.Content.Text, reply.To)
			}
			if c, err := readClaim(root, agent, m.ID); err != nil || c.Status != claim.Replied || c.Reply != reply.ID {
				t.Errorf("claim = %+v, %v; want replied with %s", c, err, reply.ID)
			}
			for _, a := range disk.attempts() {
				if a.ID != reply.ID {
					t.Errorf("an attempt used id %s, the reply is %s: one reply token, one id", a.ID, reply.ID)
				}
			}
		})
	}
}

// intoOutbox starts a watcher whose channel writes fail with ENOSPC, sends
// it a message and waits until the reply is kept in the outbox.
func intoOutbox(t *testing.T, root tree.Root) (*harness, *fakeRunner, *flakyDisk, channel.Message) {
	t.Helper()
	r := &fakeRunner{}
	cfg := config(root, r)
	disk := &flakyDisk{root: root}
	disk.full.Store(true)
	watcher.SetWriteMessage(&cfg, disk.write)
	h := start(t, cfg)
	m := send(t, root, agent, "answer me")
	waitFor(t, "the reply to go to the outbox", func() bool {
		return len(h.logs.find("cannot post the reply; kept in the outbox and retried", "msg_id", m.ID)) == 1
	})
	return h, r, disk, m
}

// TestOutboxRestart: replies left in the outbox by a watcher that stopped
// while the disk was full are posted by the next start, first and once,
// without running the CLI again, also when an attempt had in fact landed.
func TestOutboxRestart(t *testing.T) {
	t.Parallel()
	for _, landed := range []bool{false, true} {
		name := map[bool]string{false: "never posted", true: "an attempt landed"}[landed]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			h1, r1, disk, m := intoOutbox(t, root)
			if err := h1.stop(); err != nil {
				t.Fatal(err)
			}
			if len(h1.logs.find("replies left in the outbox; posted at the next start")) != 1 {
				t.Errorf("the first run did not say that replies are left in the outbox")
			}
			if got := outboxFiles(t, root); len(got) != 1 {
				t.Fatalf("outbox after the first run = %q, want one entry", got)
			}
			if landed {
				// One of the attempts reached the server after all.
				tried := disk.attempts()
				post(t, root, tried[len(tried)-1])
			} else if n := len(repliesTo(messages(t, root), m.ID)); n != 0 {
				t.Fatalf("%d replies after the first run, want 0", n)
			}

			r2 := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
				if c.msgID() == m.ID {
					t.Errorf("the second run ran the CLI again for %s", c.msgID())
				}
				return modelcli.Response{Text: "reply to " + c.msgID()}, nil
			}}
			cfg2 := config(root, r2)
			cfg2.ClaimGrace = 1 // the first run's claim is judged gone at once
			h2 := start(t, cfg2)
			waitReplies(t, root, m.ID)
			waitFor(t, "the outbox to empty", func() bool { return len(outboxFiles(t, root)) == 0 })
			waitSettled(t, root, agent)
			other := send(t, root, agent, "business as usual")
			waitReplies(t, root, other.ID)
			h2.stop()

			checkOnce(t, root, r1, m)
			msgs := messages(t, root)
			if n := len(repliesTo(msgs, m.ID)); n != 1 {
				t.Errorf("%d replies, want 1", n)
			}
			want := "replied from the outbox"
			if landed {
				want = "not posting: the reply is already posted"
			}
			if len(h2.logs.find(want, "msg_id", m.ID)) != 1 {
				t.Errorf("the second run did not log %q", want)
			}
			reply := repliesTo(msgs, m.ID)[0]
			if c, err := readClaim(root, agent, m.ID); err != nil || c.Status != claim.Replied || c.Reply != reply.ID {
				t.Errorf("claim = %+v, %v; want replied with %s", c, err, reply.ID)
			}
		})
	}
}

// TestOutboxInMemory: when the outbox cannot be written either (the state
// is on the same full disk), the reply is kept in memory, retried, posted
// once when the channel has room; a watcher stopped before that says the
// reply is lost.
func TestOutboxInMemory(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	if err := os.MkdirAll(root.State(agent), 0o755); err != nil {
		t.Fatal(err)
	}
	// The outbox cannot be created: its name is taken by a file.
	if err := os.WriteFile(root.Outbox(agent), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{}
	cfg := config(root, r)
	disk := &flakyDisk{root: root}
	disk.full.Store(true)
	watcher.SetWriteMessage(&cfg, disk.write)
	h := start(t, cfg)

	m := send(t, root, agent, "answer me")
	waitFor(t, "the reply to be kept in memory", func() bool {
		return len(h.logs.find("cannot post the reply nor keep it on disk; kept in memory and retried (lost if the watcher stops first)", "msg_id", m.ID)) == 1
	})
	// While the reply is only in memory, a new message waits: its reply
	// would have nowhere to go either.
	next := send(t, root, agent, "wait your turn")
	waitFor(t, "retries", func() bool { return disk.fails.Load() >= 3 })
	waitFor(t, "the hold to be logged", func() bool {
		return len(h.logs.find("a reply is held in memory only (no room on disk); no new run until it is kept or posted")) > 0
	})
	if len(r.callsFor(next.ID)) != 0 {
		t.Fatal("a new run started while a reply was held in memory")
	}
	disk.full.Store(false)
	waitReplies(t, root, m.ID)
	waitReplies(t, root, next.ID)
	waitSettled(t, root, agent)

	lost := send(t, root, agent, "this one is lost")
	disk.full.Store(true)
	waitFor(t, "the second reply to be kept in memory", func() bool {
		return len(h.logs.find("cannot post the reply nor keep it on disk; kept in memory and retried (lost if the watcher stops first)", "msg_id", lost.ID)) == 1
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if len(h.logs.find("replies lost: no room to keep them on disk")) != 1 {
		t.Errorf("no log line about the lost reply")
	}
	msgs := messages(t, root)
	if n := len(repliesTo(msgs, m.ID)); n != 1 {
		t.Errorf("%d replies to the first message, want 1", n)
	}
	if n := len(repliesTo(msgs, lost.ID)); n != 0 {
		t.Errorf("%d replies to the lost one, want 0", n)
	}
}

// TestOutboxRealFullDisk runs a watcher on a small tmpfs that fills up
// while the CLI runs: the reply is kept on disk in the room the outbox's
// reserve frees (the state is on the same disk), the heartbeat file stays
// whole, no temp file is left, no new run starts while the disk is full,
// and after a restart on the still full disk the reply is posted once when
// space returns, without running the CLI again. Needs root for the mount.
func TestOutboxRealFullDisk(t *testing.T) {
	t.Parallel()
	dir, err := tmpfs.Mount(t, "4m")
	if err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	root := tree.Root(dir)
	release := make(chan struct{})
	r := &fakeRunner{reply: blockUntil(release), started: make(chan runCall, 1)}
	cfg := config(root, r)
	h := start(t, cfg)
	m := send(t, root, agent, "answer me")
	<-r.started

	if got := dotFiles(t, root.Outbox(agent)); !slices.Equal(got, []string{".reserve"}) {
		t.Fatalf("outbox holds %q before the disk fills, want the reserve", got)
	}
	filler := fill(t, filepath.Join(dir, "filler"))
	before := readPresence(t, root, agent)
	waitFor(t, "a failed heartbeat", func() bool { return len(h.logs.find("cannot write presence")) > 0 })
	if got := readPresence(t, root, agent); got.AgentID != agent || got.State != presence.StateAwake {
		t.Errorf("presence after failed writes = %+v, want the last good heartbeat (%+v)", got, before)
	}
	close(release)
	waitFor(t, "the reply to be kept in the outbox", func() bool {
		return len(h.logs.find("cannot post the reply; kept in the outbox and retried", "msg_id", m.ID)) == 1
	})
	if len(h.logs.find("disk full: the outbox's reserve makes room for a reply", "msg_id", m.ID)) != 1 {
		t.Error("no log line about the reserve")
	}
	// The room the reserve freed may let the reply through; take it
	// back. Stopped and restarted on the full disk, the watcher keeps the
	// reply in its outbox (unless it got through); once there is room it
	// posts it, and the CLI is not run again.
	filler2 := fill(t, filepath.Join(dir, "filler2"))
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if len(h.logs.find("replies lost: no room to keep them on disk")) != 0 {
		t.Fatal("the reply was lost at the stop")
	}
	for _, d := range []string{root.Channel(chName), root.Presence(), root.State(agent)} {
		if tmp := dotFiles(t, d); len(tmp) > 0 {
			t.Errorf("temp files left in %s: %q", d, tmp)
		}
	}
	h = start(t, cfg)
	for _, f := range []string{filler, filler2} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	waitReplies(t, root, m.ID)
	waitSettled(t, root, agent)
	waitFor(t, "the reserve to be made again", func() bool {
		return slices.Equal(dotFiles(t, root.Outbox(agent)), []string{".reserve"})
	})
	h.stop()
	checkOnce(t, root, r, m)
	if got := outboxFiles(t, root); len(got) != 0 {
		t.Errorf("outbox = %q after the reply, want empty", got)
	}
}

// fill writes path until the filesystem is full, and returns path.
func fill(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{64 << 10, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	return path
}

// dotFiles returns the dot-files (temp files) in dir.
func dotFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestOutboxCorruptEntry: an outbox entry damaged between runs is kept
// aside and its message answered again, once (the reply token reserved by
// the first run names the one reply).
func TestOutboxCorruptEntry(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	h1, _, disk, m := intoOutbox(t, root)
	h1.stop()
	entry := filepath.Join(root.Outbox(agent), chName+"."+m.ID+".json")
	data, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(entry, data[:len(data)/3], 0o644); err != nil {
		t.Fatal(err)
	}

	r2 := &fakeRunner{}
	cfg2 := config(root, r2)
	cfg2.ClaimGrace = 1
	h2 := start(t, cfg2)
	waitReplies(t, root, m.ID)
	waitSettled(t, root, agent)
	h2.stop()
	if n := len(h2.logs.find("corrupt outbox entry; the message will be answered again", "msg_id", m.ID)); n != 1 {
		t.Errorf("%d log lines about the corrupt entry, want 1", n)
	}
	if aside, _ := filepath.Glob(entry + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("corrupt copies: %q, want 1", aside)
	}
	if got := outboxFiles(t, root); len(got) != 1 || !strings.Contains(got[0], ".corrupt-") {
		t.Errorf("outbox = %q, want only the corrupt copy", got)
	}
	checkOnce(t, root, r2, m)
	if tried := disk.attempts(); len(tried) == 0 || repliesTo(messages(t, root), m.ID)[0].ID != tried[0].ID {
		t.Errorf("the reply does not use the id the first run reserved")
	}
}

// TestReplyIDClash: another message of the agent already holds the id the
// reply token names (two replies in one second drew the same random part):
// the watcher renews the token and posts the one reply under a new id,
// instead of taking the clash for its own earlier post.
func TestReplyIDClash(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	writer := &channel.Writer{Root: root}
	var taken atomic.Value // the id the other message took
	watcher.SetWriteMessage(&cfg, func(m *channel.Message) error {
		if m.From == agent && m.Metadata.InReplyTo != "" && taken.CompareAndSwap(nil, m.ID) {
			other := channel.Message{ID: m.ID, SessionID: m.SessionID, From: agent, To: "bob",
				Content: channel.Content{Text: "a reply to something else"}}
			if err := writer.Post(&other); err != nil {
				return err
			}
		}
		return writer.Post(m)
	})
	h := start(t, cfg)
	m := send(t, root, agent, "answer me")
	msgs := waitReplies(t, root, m.ID)
	waitSettled(t, root, agent)
	h.stop()
	checkOnce(t, root, r, m)
	reply := repliesTo(msgs, m.ID)[0]
	if reply.ID == taken.Load() || reply.Content.Text != "reply to "+m.ID {
		t.Errorf("reply %s %q; the clashing id was %v", reply.ID, reply.Content.Text, taken.Load())
	}
	if len(h.logs.find("reply id taken by another message; renewed", "msg_id", m.ID)) != 1 {
		t.Error("no log line about the renewal")
	}
	if c, err := readClaim(root, agent, m.ID); err != nil || c.Status != claim.Replied || c.Reply != reply.ID {
		t.Errorf("claim = %+v, %v; want replied with %s", c, err, reply.ID)
	}
}

// TestOutboxReserveLeavesRoom: on a nearly full disk the watcher does not
// take the reserve (which would leave the disk no room for anyone's sends
// and heartbeats) and says so with a warning. Needs root for the mount.
func TestOutboxReserveLeavesRoom(t *testing.T) {
	t.Parallel()
	dir, err := tmpfs.Mount(t, "4m")
	if err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	// Leave about 2.1 MiB free: room for the 2 MiB reserve, not for the
	// margin after it.
	if err := os.WriteFile(filepath.Join(dir, "filler"), make([]byte, 4<<20-2<<20-100<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	root := tree.Root(dir)
	h := start(t, config(root, &fakeRunner{}))
	waitFor(t, "a warning about the reserve", func() bool {
		return len(h.logs.find("cannot make the outbox's reserve; a reply may not be kept on a full disk")) > 0
	})
	if got := dotFiles(t, root.Outbox(agent)); len(got) != 0 {
		t.Errorf("outbox holds %q on a nearly full disk, want no reserve", got)
	}
}

// TestOutboxRetriedWhenClaimsAnswer: a reply waiting in the outbox whose
// back-off grew while the writes failed (a remote watcher's bridge was
// away) is posted as soon as a claim succeeds again, not when the
// back-off (here 1.6 s, up to 32 polls) runs out.
func TestOutboxRetriedWhenClaimsAnswer(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.Poll = 100 * time.Millisecond
	disk := &flakyDisk{root: root}
	disk.full.Store(true)
	watcher.SetWriteMessage(&cfg, disk.write)
	h := start(t, cfg)
	m := send(t, root, agent, "answer me")
	// Five failures: the next attempt is 16 polls (1.6 s) away.
	waitFor(t, "five failed attempts", func() bool { return disk.fails.Load() >= 5 })
	disk.full.Store(false)
	freed := time.Now()
	send(t, root, agent, "and me")
	waitReplies(t, root, m.ID)
	if took := time.Since(freed); took > time.Second {
		t.Errorf("the reply in the outbox was posted %v after the writes worked again and a claim succeeded, want at once", took)
	}
	waitSettled(t, root, agent)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	checkOnce(t, root, r, m)
}
