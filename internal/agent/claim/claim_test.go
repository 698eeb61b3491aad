package claim_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
)

const (
	agent = "codex"
	chan1 = "agent-os-paper"
	msgID = "msg-20260111-163315-claude-4c78"
	grace = time.Minute
)

// t0 is the start of every fake clock.
var t0 = time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)

// clock is a fake clock shared by the stores of one test. hook, if set, runs
// on every reading, outside the lock: tests use it to act at a precise point
// of the protocol (every step that reads the clock).
type clock struct {
	mu   sync.Mutex
	t    time.Time
	hook func()
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	now, hook := c.t, c.hook
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	return now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *clock) setHook(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hook = f
}

// owner is a watcher of agent on host, with the boot and PID namespace of
// that host.
func owner(host, instance string) claim.Owner {
	return claim.Owner{
		Agent:    agent,
		Host:     host,
		PID:      4242,
		BootID:   "boot-" + host,
		PIDNS:    "pid:[4026531836]",
		Instance: instance,
	}
}

// store is a Store of o on root with clock clk whose PIDs are all alive.
func store(root tree.Root, o claim.Owner, clk *clock) *claim.Store {
	s := &claim.Store{Root: root, Self: o, Grace: grace, Now: clk.Now, Alive: func(int) bool { return true }}
	if viaBridge {
		s.Dirs, s.Signer = bridgeDirs(root, o.Agent), bridgeKey
	}
	return s
}

func claimDir(root tree.Root, ch string) string {
	return root.AgentClaims(ch, agent)
}

func claimFile(root tree.Root, ch, id string) string {
	return filepath.Join(claimDir(root, ch), id+".json")
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readClaim reads the claim of id as any watcher of the agent sees it.
func readClaim(t *testing.T, root tree.Root, ch, id string) claim.Claim {
	t.Helper()
	observer := &claim.Store{Root: root, Self: claim.Owner{Agent: agent, Instance: "observer"}}
	c, err := observer.Read(ch, id)
	if err != nil {
		t.Fatalf("claim of %s: %v", id, err)
	}
	return c
}

// snapshot is every claim file of the channel (dot-files aside) with its
// content, to tell whether an operation changed anything.
func snapshot(t *testing.T, root tree.Root, ch string) string {
	t.Helper()
	dir := claimDir(root, ch)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			fmt.Fprintf(&b, "%s: %s\n", e.Name(), readBytes(t, filepath.Join(dir, e.Name())))
		}
	}
	return b.String()
}

// writeClaim puts c in place as if another watcher had published it.
func writeClaim(t *testing.T, root tree.Root, ch string, c claim.Claim) {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, root, ch, c.Message, data)
}

func writeRaw(t *testing.T, root tree.Root, ch, id string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(claimDir(root, ch), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(claimFile(root, ch, id), data, 0o666); err != nil {
		t.Fatal(err)
	}
}

// touch sets a file's modification time.
func touch(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// noDotFiles fails if a temp or moved-aside file is left in dir.
func noDotFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind in %s: %s", dir, e.Name())
		}
	}
}

func acquire(t *testing.T, s *claim.Store, ch, id string) (claim.Claim, claim.Outcome) {
	t.Helper()
	c, out, err := s.Acquire(ch, id)
	if err != nil {
		t.Fatalf("Acquire by %s: %v", s.Self.Instance, err)
	}
	return c, out
}

func TestAcquireBasics(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := newClock(t0)
	a := store(root, owner("vm-1", "a"), clk)
	b := store(root, owner("vm-2", "b"), clk)

	c, out := acquire(t, a, chan1, msgID)
	if out != claim.Acquired {
		t.Fatalf("first Acquire: got %v, want acquired", out)
	}
	if c.Owner != a.Self || c.Status != claim.Working || c.Message != msgID || c.Channel != chan1 ||
		!c.Claimed.Equal(t0) || !c.Heartbeat.Equal(t0) || c.Takeovers != 0 {
		t.Errorf("first Acquire returned %+v", c)
	}
	if got := readClaim(t, root, chan1, msgID); got.Owner != a.Self || got.Status != claim.Working {
		t.Errorf("claim file: %+v", got)
	}

	clk.Add(grace / 2)
	if c, out := acquire(t, b, chan1, msgID); out != claim.Held || c.Owner != a.Self {
		t.Errorf("Acquire by another host while fresh: got %v owner %+v, want held by a", out, c.Owner)
	}
	if c, out := acquire(t, a, chan1, msgID); out != claim.Acquired || c.Owner != a.Self {
		t.Errorf("own re-Acquire: got %v owner %+v, want acquired", out, c.Owner)
	}

	clk.Add(grace / 2)
	if err := a.Heartbeat(chan1, msgID); err != nil {
		t.Fatal(err)
	}
	if got := readClaim(t, root, chan1, msgID); !got.Heartbeat.Equal(t0.Add(grace)) {
		t.Errorf("heartbeat: got %v, want %v", got.Heartbeat, t0.Add(grace))
	}
	clk.Add(grace) // a full grace after Claimed, but the heartbeat is fresh
	if _, out := acquire(t, b, chan1, msgID); out != claim.Held {
		t.Errorf("Acquire after a heartbeat: got %v, want held", out)
	}

	if err := a.Finish(chan1, msgID, claim.Replied, "msg-20260111-163400-codex-0001", ""); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	for _, s := range []*claim.Store{a, b} {
		c, out := acquire(t, s, chan1, msgID)
		if out != claim.Done || c.Status != claim.Replied || c.Reply != "msg-20260111-163400-codex-0001" {
			t.Errorf("Acquire by %s after Finish: got %v %+v, want done/replied", s.Self.Instance, out, c)
		}
	}
	got, err := b.Read(chan1, msgID)
	if err != nil || got.Status != claim.Replied || got.Owner != a.Self {
		t.Errorf("Read: %+v, %v", got, err)
	}
	noDotFiles(t, claimDir(root, chan1))
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[claim.Outcome]string{claim.Acquired: "acquired", claim.Held: "held", claim.Done: "done"} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", o, got, want)
		}
	}
}

func TestStaleness(t *testing.T) {
	host := owner("vm-1", "new")
	tests := []struct {
		name     string
		old      claim.Owner
		self     claim.Owner
		age      time.Duration // of the old heartbeat, on the contender's clock
		dead     bool          // the old PID is not running (if asked)
		want     claim.Outcome
		askAlive bool // whether the PID may be consulted at all
	}{
		{name: "other host fresh", old: owner("vm-2", "old"), self: host, age: grace / 2, want: claim.Held},
		{name: "other host at grace", old: owner("vm-2", "old"), self: host, age: grace, want: claim.Held},
		{name: "other host past grace", old: owner("vm-2", "old"), self: host, age: grace + time.Millisecond, want: claim.Acquired},
		{name: "other host dead pid fresh", old: owner("vm-2", "old"), self: host, age: time.Second, dead: true, want: claim.Held},
		{name: "same machine dead pid", old: owner("vm-1", "old"), self: owner("vm-1", "new"), age: time.Second, dead: true, want: claim.Acquired, askAlive: true},
		{name: "same machine live pid fresh", old: owner("vm-1", "old"), self: owner("vm-1", "new"), age: time.Second, want: claim.Held, askAlive: true},
		{name: "same machine live pid past grace", old: owner("vm-1", "old"), self: owner("vm-1", "new"), age: 2 * grace, want: claim.Acquired, askAlive: true},
		{
			name: "same host other boot dead pid", self: owner("vm-1", "new"), age: time.Second, dead: true, want: claim.Held,
			old: func() claim.Owner { o := owner("vm-1", "old"); o.BootID = "boot-before-reboot"; return o }(),
		},
		{
			name: "same host other pid namespace dead pid", self: owner("vm-1", "new"), age: time.Second, dead: true, want: claim.Held,
			old: func() claim.Owner { o := owner("vm-1", "old"); o.PIDNS = "pid:[4026532999]"; return o }(),
		},
		{
			name: "same host unknown boot dead pid", self: owner("vm-1", "new"), age: time.Second, dead: true, want: claim.Held,
			old: func() claim.Owner { o := owner("vm-1", "old"); o.BootID = ""; return o }(),
		},
		{
			// Clock skew: the owner's clock runs an hour ahead. Its heartbeat
			// is in the judge's future, and stays fresh for an hour plus the
			// grace after the owner dies (see report).
			name: "heartbeat from the future", old: owner("vm-2", "old"), self: host, age: -time.Hour, want: claim.Held,
		},
		{
			name: "same host other boot past grace", self: owner("vm-1", "new"), age: grace + time.Second, want: claim.Acquired,
			old: func() claim.Owner { o := owner("vm-1", "old"); o.BootID = "boot-before-reboot"; return o }(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			oldClk := newClock(t0)
			if _, out := acquire(t, store(root, tt.old, oldClk), chan1, msgID); out != claim.Acquired {
				t.Fatalf("seed: %v", out)
			}
			before := snapshot(t, root, chan1)

			s := store(root, tt.self, newClock(t0.Add(tt.age)))
			var asked atomic.Int32
			s.Alive = func(pid int) bool {
				asked.Add(1)
				if pid != tt.old.PID {
					t.Errorf("Alive(%d), want Alive(%d)", pid, tt.old.PID)
				}
				return !tt.dead
			}
			c, out := acquire(t, s, chan1, msgID)
			if out != tt.want {
				t.Fatalf("got %v, want %v (claim %+v)", out, tt.want, c)
			}
			if asked.Load() > 0 && !tt.askAlive {
				t.Errorf("the PID of an owner on another machine was checked")
			}
			onDisk := readClaim(t, root, chan1, msgID)
			switch tt.want {
			case claim.Held:
				if c.Owner != tt.old {
					t.Errorf("held by %+v, want %+v", c.Owner, tt.old)
				}
				if after := snapshot(t, root, chan1); after != before {
					t.Errorf("a held claim changed:\n%s\n%s", before, after)
				}
			case claim.Acquired:
				if c.Owner != tt.self || onDisk.Owner != tt.self {
					t.Errorf("after takeover: returned owner %+v, file owner %+v, want %+v", c.Owner, onDisk.Owner, tt.self)
				}
				if c.Takeovers != 1 || onDisk.Takeovers != 1 {
					t.Errorf("takeovers: returned %d, file %d, want 1", c.Takeovers, onDisk.Takeovers)
				}
				wantNote := fmt.Sprintf("taken over from %s pid %d", tt.old.Host, tt.old.PID)
				if c.Note != wantNote || onDisk.Note != wantNote {
					t.Errorf("note: returned %q, file %q, want %q", c.Note, onDisk.Note, wantNote)
				}
				if c.Status != claim.Working || !c.Claimed.Equal(t0.Add(tt.age)) || !c.Heartbeat.Equal(t0.Add(tt.age)) {
					t.Errorf("new claim %+v", c)
				}
			}
			noDotFiles(t, claimDir(root, chan1))
		})
	}
}

// TestTakeoverChain takes a claim over twice: the count grows and a reply id
// recorded in the claim survives.
func TestTakeoverChain(t *testing.T) {
	root := tree.Root(t.TempDir())
	writeClaim(t, root, chan1, claim.Claim{
		Message: msgID, Channel: chan1, Owner: owner("vm-9", "ghost"), Status: claim.Working,
		Claimed: t0, Heartbeat: t0, Reply: "msg-20260111-163316-codex-beef",
	})
	clk := newClock(t0.Add(2 * grace))
	a := store(root, owner("vm-1", "a"), clk)
	b := store(root, owner("vm-2", "b"), clk)
	c, out := acquire(t, a, chan1, msgID)
	if out != claim.Acquired || c.Takeovers != 1 || c.Reply != "msg-20260111-163316-codex-beef" {
		t.Fatalf("first takeover: %v %+v", out, c)
	}
	clk.Add(2 * grace)
	c, out = acquire(t, b, chan1, msgID)
	if out != claim.Acquired || c.Takeovers != 2 || c.Reply != "msg-20260111-163316-codex-beef" ||
		c.Note != "taken over from vm-1 pid 4242" {
		t.Fatalf("second takeover: %v %+v", out, c)
	}
	if err := a.Heartbeat(chan1, msgID); !errors.Is(err, claim.ErrLost) {
		t.Errorf("Heartbeat by the first taker after the second takeover: %v, want ErrLost", err)
	}
}

func TestFinishedNeverTakenOver(t *testing.T) {
	for _, status := range []string{claim.Replied, claim.Failed, claim.Skipped} {
		t.Run(status, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			old := owner("vm-1", "old")
			clk := newClock(t0)
			o := store(root, old, clk)
			acquire(t, o, chan1, msgID)
			if err := o.Finish(chan1, msgID, status, "", "why"); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, root, chan1)
			for _, s := range []*claim.Store{
				store(root, owner("vm-2", "late"), newClock(t0.Add(1000*grace))),
				{Root: root, Self: owner("vm-1", "same-machine"), Grace: grace, Now: newClock(t0.Add(time.Second)).Now, Alive: func(int) bool { return false }},
			} {
				if s.Stale(readClaim(t, root, chan1, msgID)) {
					t.Errorf("%s: Stale reports a %s claim stale", s.Self.Instance, status)
				}
				c, out := acquire(t, s, chan1, msgID)
				if out != claim.Done || c.Status != status || c.Note != "why" {
					t.Errorf("%s: got %v %+v, want done/%s", s.Self.Instance, out, c, status)
				}
			}
			if after := snapshot(t, root, chan1); before != after {
				t.Errorf("finished claim changed:\n%s\n%s", before, after)
			}
		})
	}
}

func TestStaleOwnClaim(t *testing.T) {
	s := store("", owner("vm-1", "me"), newClock(t0.Add(100*grace)))
	s.Alive = func(int) bool { return false }
	c := claim.Claim{Owner: s.Self, Status: claim.Working, Heartbeat: t0}
	if s.Stale(c) {
		t.Errorf("a store judges its own claim stale")
	}
}

func TestNotOwner(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := newClock(t0)
	a := store(root, owner("vm-1", "a"), clk)
	b := store(root, owner("vm-2", "b"), clk)
	sameHost := store(root, owner("vm-1", "a2"), clk) // a's host, another instance
	acquire(t, a, chan1, msgID)
	before := snapshot(t, root, chan1)
	clk.Add(time.Second)

	ops := []struct {
		name string
		do   func(*claim.Store) error
	}{
		{"heartbeat", func(s *claim.Store) error { return s.Heartbeat(chan1, msgID) }},
		{"finish replied", func(s *claim.Store) error {
			return s.Finish(chan1, msgID, claim.Replied, "msg-20260111-163400-codex-0001", "")
		}},
		{"finish failed", func(s *claim.Store) error { return s.Finish(chan1, msgID, claim.Failed, "", "boom") }},
	}
	for _, op := range ops {
		for _, s := range []*claim.Store{b, sameHost} {
			t.Run(op.name+"/"+s.Self.Instance, func(t *testing.T) {
				err := op.do(s)
				if !errors.Is(err, claim.ErrLost) {
					t.Fatalf("got %v, want ErrLost", err)
				}
				if !strings.Contains(err.Error(), "vm-1") {
					t.Errorf("error %q does not name the owner's host", err)
				}
				if after := snapshot(t, root, chan1); before != after {
					t.Errorf("claim changed by a non-owner:\n%s\n%s", before, after)
				}
			})
		}
	}

	t.Run("no claim", func(t *testing.T) {
		err := a.Heartbeat(chan1, "msg-20260111-163316-claude-0000")
		if err == nil || errors.Is(err, claim.ErrLost) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Heartbeat without a claim: %v, want a not-exist error", err)
		}
		if _, err := a.Read(chan1, "msg-20260111-163316-claude-0000"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Read without a claim: %v, want a not-exist error", err)
		}
		if err := a.Heartbeat("never-used", msgID); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Heartbeat in a channel without claims: %v, want a not-exist error", err)
		}
	})
	noDotFiles(t, claimDir(root, chan1))
}

// race starts n contenders at once and returns what each got.
func race[T any](n int, f func(i int) T) []T {
	got := make([]T, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			got[i] = f(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return got
}

type attempt struct {
	c   claim.Claim
	out claim.Outcome
	err error
}

// checkOneWinner checks that exactly one attempt acquired the claim, that
// the others were told it is held, and that the file names the winner.
func checkOneWinner(t *testing.T, root tree.Root, ch, id string, stores []*claim.Store, got []attempt) (winner int) {
	t.Helper()
	winner = -1
	var acquired []string
	for i, a := range got {
		switch {
		case a.err != nil:
			t.Errorf("%s: %v", stores[i].Self.Instance, a.err)
		case a.out == claim.Acquired:
			acquired = append(acquired, stores[i].Self.Instance)
			winner = i
			if a.c.Owner != stores[i].Self {
				t.Errorf("%s acquired a claim owned by %+v", stores[i].Self.Instance, a.c.Owner)
			}
		case a.out != claim.Held:
			t.Errorf("%s: got %v, want held", stores[i].Self.Instance, a.out)
		}
	}
	if len(acquired) != 1 {
		t.Fatalf("%s: %d contenders acquired it, want 1: %v", id, len(acquired), acquired)
	}
	if onDisk := readClaim(t, root, ch, id); onDisk.Owner != stores[winner].Self {
		t.Errorf("%s: file owned by %s, winner %s", id, onDisk.Owner.Instance, acquired[0])
	}
	for i, a := range got {
		if i != winner && a.err == nil && a.c.Owner != stores[winner].Self {
			// A loser may legitimately have seen an earlier state, but it must
			// never be told it holds the claim itself.
			if a.c.Owner == stores[i].Self {
				t.Errorf("%s lost but was handed its own claim", stores[i].Self.Instance)
			}
		}
	}
	return winner
}

const contenders = 16

func contenderStores(root tree.Root, clk *clock) []*claim.Store {
	stores := make([]*claim.Store, contenders)
	for i := range stores {
		stores[i] = store(root, owner(fmt.Sprintf("vm-%d", i), fmt.Sprintf("c%02d", i)), clk)
	}
	return stores
}

func TestAcquireContention(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := newClock(t0)
	stores := contenderStores(root, clk)
	for round := range 50 {
		id := fmt.Sprintf("msg-20260111-163315-claude-%04x", round)
		got := race(contenders, func(i int) attempt {
			c, out, err := stores[i].Acquire(chan1, id)
			return attempt{c, out, err}
		})
		if checkOneWinner(t, root, chan1, id, stores, got); t.Failed() {
			return
		}
	}
	noDotFiles(t, claimDir(root, chan1))
}

// TestTakeoverContention races contenders to take over one stale claim per
// round: the rename-aside, verify and republish steps must let exactly one
// of them win.
func TestTakeoverContention(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 30
	}
	root := tree.Root(t.TempDir())
	clk := newClock(t0.Add(2 * grace))
	stores := contenderStores(root, clk)
	ghost := owner("vm-ghost", "ghost")
	var freshWins int
	for round := range rounds {
		id := fmt.Sprintf("msg-20260111-163315-claude-%04x", round)
		writeClaim(t, root, chan1, claim.Claim{Message: id, Channel: chan1, Owner: ghost, Status: claim.Working, Claimed: t0, Heartbeat: t0})
		got := race(contenders, func(i int) attempt {
			c, out, err := stores[i].Acquire(chan1, id)
			return attempt{c, out, err}
		})
		if checkOneWinner(t, root, chan1, id, stores, got); t.Failed() {
			t.Fatalf("round %d of %d", round, rounds)
		}
		if readClaim(t, root, chan1, id).Takeovers != 1 {
			// The takeover history was lost: a contender published a fresh
			// claim while the stale one was moved aside (see report).
			freshWins++
		}
	}
	if freshWins > 0 {
		t.Logf("%d of %d takeovers were won by a fresh publish (Takeovers reset to 0)", freshWins, rounds)
	}
	noDotFiles(t, claimDir(root, chan1))
}

// hookAt runs f on the n-th reading of clk (1-based), once.
func hookAt(clk *clock, n int32, f func()) {
	var readings atomic.Int32
	clk.setHook(func() {
		if readings.Add(1) == n {
			f()
		}
	})
}

// TestTakeoverOfChangedClaim: a contender judges a claim stale, but before
// it moves the claim aside another contender takes it over. The late one
// must put the new claim back and report it held.
//
// The hook acts on late's second clock reading. Today's Acquire reads the
// clock once per try before its first publish, then in Stale after reading
// the claim it judges: the second reading falls between the judgement and
// the rename that moves the claim aside.
func TestTakeoverOfChangedClaim(t *testing.T) {
	root := tree.Root(t.TempDir())
	writeClaim(t, root, chan1, claim.Claim{Message: msgID, Channel: chan1, Owner: owner("vm-9", "ghost"), Status: claim.Working, Claimed: t0, Heartbeat: t0})
	now := t0.Add(2 * grace)
	b := store(root, owner("vm-3", "b"), newClock(now))
	lateClk := newClock(now)
	late := store(root, owner("vm-2", "late"), lateClk)
	hookAt(lateClk, 2, func() {
		if _, out, err := b.Acquire(chan1, msgID); err != nil || out != claim.Acquired {
			t.Errorf("b: %v %v", out, err)
		}
	})
	c, out := acquire(t, late, chan1, msgID)
	if out != claim.Held || c.Owner != b.Self {
		t.Fatalf("late: %v owner %s, want held by b", out, c.Owner.Instance)
	}
	if onDisk := readClaim(t, root, chan1, msgID); onDisk.Owner != b.Self || onDisk.Takeovers != 1 {
		t.Errorf("file: %+v, want b's claim", onDisk)
	}
	if err := b.Heartbeat(chan1, msgID); err != nil {
		t.Errorf("b lost its claim: %v", err)
	}
	noDotFiles(t, claimDir(root, chan1))
}

// TestUpdateAfterTakeover: an owner that stalls past the grace (NFS hang,
// VM pause, SIGSTOP) between reading its claim and writing it back must not
// erase the claim of the watcher that took over meanwhile; it must learn
// that it lost.
//
// update reads the claim, then reads the clock to stamp it, then replaces
// the file; the hook takes the claim over on that reading.
func TestUpdateAfterTakeover(t *testing.T) {
	tests := []struct {
		name string
		do   func(*claim.Store) error
	}{
		{"heartbeat", func(s *claim.Store) error { return s.Heartbeat(chan1, msgID) }},
		{"finish failed", func(s *claim.Store) error { return s.Finish(chan1, msgID, claim.Failed, "", "timeout") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			oldClk := newClock(t0)
			old := store(root, owner("vm-1", "old"), oldClk)
			acquire(t, old, chan1, msgID)
			taker := store(root, owner("vm-2", "taker"), newClock(t0.Add(2*grace)))
			var took claim.Outcome = -1
			hookAt(oldClk, 1, func() {
				_, took, _ = taker.Acquire(chan1, msgID)
			})
			err := tt.do(old)
			if took != claim.Acquired {
				t.Fatalf("taker: %v, want acquired", took)
			}
			onDisk := readClaim(t, root, chan1, msgID)
			if !errors.Is(err, claim.ErrLost) || onDisk.Owner != taker.Self || onDisk.Status != claim.Working {
				t.Errorf("the old owner's %s after a takeover returned %v and left the claim of %s (%s); "+
					"want ErrLost and the taker's working claim intact: both now believe they own the message",
					tt.name, err, onDisk.Owner.Instance, onDisk.Status)
			}
			if err := taker.Heartbeat(chan1, msgID); err != nil {
				t.Errorf("taker's heartbeat: %v", err)
			}
		})
	}
}

// TestPutBackWindow: when a late contender moves aside a claim it did not
// judge (one that a faster contender has just published) it links it back;
// until then the name is free and any watcher's first publish succeeds.
// Spinners acquiring a message whose live claim is held by b must never
// get it.
func TestPutBackWindow(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	root := tree.Root(t.TempDir())
	now := t0.Add(2 * grace)
	const spinners = 6
	spin := make([]*claim.Store, spinners)
	for i := range spin {
		spin[i] = store(root, owner(fmt.Sprintf("vm-s%d", i), fmt.Sprintf("s%d", i)), newClock(now))
	}
	var stolen []string
	for round := range rounds {
		id := fmt.Sprintf("msg-20260111-163315-claude-%04x", round)
		writeClaim(t, root, chan1, claim.Claim{Message: id, Channel: chan1, Owner: owner("vm-9", "ghost"), Status: claim.Working, Claimed: t0, Heartbeat: t0})
		b := store(root, owner("vm-3", "b"), newClock(now))
		lateClk := newClock(now)
		late := store(root, owner("vm-2", "late"), lateClk)

		var stop atomic.Bool
		var wg sync.WaitGroup
		var mu sync.Mutex
		hookAt(lateClk, 2, func() {
			if _, out, err := b.Acquire(chan1, id); err != nil || out != claim.Acquired {
				t.Errorf("b: %v %v", out, err)
			}
			// b holds a live claim from here on; start the spinners.
			for _, s := range spin {
				wg.Go(func() {
					for try := 0; try < 100 && !stop.Load(); try++ {
						_, out, err := s.Acquire(chan1, id)
						if err != nil {
							t.Errorf("%s: %v", s.Self.Instance, err)
							return
						}
						if out == claim.Acquired {
							mu.Lock()
							stolen = append(stolen, fmt.Sprintf("round %d: %s", round, s.Self.Instance))
							mu.Unlock()
							return
						}
					}
				})
			}
			time.Sleep(200 * time.Microsecond)
		})
		_, _, err := late.Acquire(chan1, id)
		time.Sleep(200 * time.Microsecond)
		stop.Store(true)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if len(stolen) > 0 {
			break
		}
	}
	if len(stolen) > 0 {
		t.Errorf("b held a live claim, yet a spinner acquired it while the late contender put it back (%v); "+
			"b's claim was deleted and two watchers own the message", stolen)
	}
	noDotFiles(t, claimDir(root, chan1))
}

func TestReserveReply(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := newClock(t0)
	a := store(root, owner("vm-1", "a"), clk)
	b := store(root, owner("vm-2", "b"), clk)
	const first, second = "msg-20260111-163400-codex-aaaa", "msg-20260111-163401-codex-bbbb"

	id, fresh, err := a.ReserveReply(chan1, msgID, first)
	if err != nil || !fresh || id != first {
		t.Fatalf("first ReserveReply: %q %v %v, want %q fresh", id, fresh, err, first)
	}
	for _, s := range []*claim.Store{a, b} {
		id, fresh, err := s.ReserveReply(chan1, msgID, second)
		if err != nil || fresh || id != first {
			t.Errorf("%s: ReserveReply again: %q %v %v, want %q not fresh", s.Self.Instance, id, fresh, err, first)
		}
	}
	var tok claim.Token
	if err := json.Unmarshal(readBytes(t, filepath.Join(claimDir(root, chan1), msgID+".reply")), &tok); err != nil {
		t.Fatal(err)
	}
	if tok.Reply != first || tok.Owner != a.Self || !tok.Time.Equal(t0) {
		t.Errorf("token %+v", tok)
	}

	t.Run("concurrent", func(t *testing.T) {
		stores := contenderStores(root, clk)
		for round := range 50 {
			id := fmt.Sprintf("msg-20260111-163315-claude-%04x", round)
			raceTokens(t, round, func(i int) (string, bool, error) {
				return stores[i].ReserveReply(chan1, id, fmt.Sprintf("reply-%d", i))
			})
		}
		noDotFiles(t, claimDir(root, chan1))
	})

	t.Run("unreadable token", func(t *testing.T) {
		// A token that cannot be read must stop the reply, never let a
		// second id through.
		const id = "msg-20260111-163315-claude-dead"
		for _, data := range []string{"", "{", `{"reply":""}`, "null"} {
			if err := os.WriteFile(filepath.Join(claimDir(root, chan1), id+".reply"), []byte(data), 0o666); err != nil {
				t.Fatal(err)
			}
			if got, fresh, err := a.ReserveReply(chan1, id, first); err == nil || fresh || got != "" {
				t.Errorf("token %q: got %q %v %v, want an error", data, got, fresh, err)
			}
		}
	})
}

// TestRenewReply: when the id a token names turns out to be taken by
// another message, RenewReply publishes the next token; a renewal for an
// id already renewed away returns the new id; concurrent renewers agree on
// one id, and ReserveReply follows the highest token.
func TestRenewReply(t *testing.T) {
	root := tree.Root(t.TempDir())
	clk := newClock(t0)
	a := store(root, owner("vm-1", "a"), clk)
	b := store(root, owner("vm-2", "b"), clk)
	const first, second, third = "msg-20260111-163400-codex-aaaa", "msg-20260111-163400-codex-bbbb", "msg-20260111-163400-codex-cccc"

	if _, _, err := a.ReserveReply(chan1, msgID, first); err != nil {
		t.Fatal(err)
	}
	id, fresh, err := a.RenewReply(chan1, msgID, first, second)
	if err != nil || !fresh || id != second {
		t.Fatalf("RenewReply: %q %v %v, want %q fresh", id, fresh, err, second)
	}
	// b saw the clash of the first id too, late: it follows a's renewal.
	if id, fresh, err := b.RenewReply(chan1, msgID, first, third); err != nil || fresh || id != second {
		t.Errorf("late RenewReply: %q %v %v, want %q not fresh", id, fresh, err, second)
	}
	if id, fresh, err := b.ReserveReply(chan1, msgID, third); err != nil || fresh || id != second {
		t.Errorf("ReserveReply after a renewal: %q %v %v, want %q", id, fresh, err, second)
	}
	if _, err := os.Stat(filepath.Join(claimDir(root, chan1), msgID+".reply.1")); err != nil {
		t.Errorf("no second token file: %v", err)
	}

	stores := contenderStores(root, clk)
	for round := range 20 {
		id := fmt.Sprintf("msg-20260111-163315-claude-%04x", round)
		if _, _, err := a.ReserveReply(chan1, id, first); err != nil {
			t.Fatal(err)
		}
		got := raceTokens(t, round, func(i int) (string, bool, error) {
			return stores[i].RenewReply(chan1, id, first, fmt.Sprintf("reply-%d", i))
		})
		if got == first {
			t.Fatalf("round %d: renewers kept the taken id %q", round, first)
		}
	}
	noDotFiles(t, claimDir(root, chan1))
}

// raceTokens runs reserve for every contender at once and checks that
// none failed, all got one id, and exactly one published it (fresh) under
// its own id, "reply-I"; it returns that id.
func raceTokens(t *testing.T, round int, reserve func(i int) (string, bool, error)) string {
	t.Helper()
	type res struct {
		id    string
		fresh bool
		err   error
	}
	got := race(contenders, func(i int) res {
		r, f, err := reserve(i)
		return res{r, f, err}
	})
	var freshN int
	for i, g := range got {
		if g.err != nil {
			t.Fatalf("%d: %v", i, g.err)
		}
		if g.fresh {
			freshN++
			if g.id != fmt.Sprintf("reply-%d", i) {
				t.Errorf("fresh token with a foreign id %q", g.id)
			}
		}
		if g.id != got[0].id {
			t.Fatalf("round %d: contenders disagree: %q vs %q", round, g.id, got[0].id)
		}
	}
	if freshN != 1 {
		t.Fatalf("round %d: %d fresh tokens, want 1", round, freshN)
	}
	return got[0].id
}

func TestGarbageClaim(t *testing.T) {
	valid, _ := json.Marshal(claim.Claim{Message: msgID, Channel: chan1, Owner: owner("vm-2", "x"), Status: claim.Working, Claimed: t0, Heartbeat: t0})
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"torn", valid[:len(valid)/2]},
		{"torn at last byte", valid[:len(valid)-1]},
		{"binary", []byte{0, 1, 2, 0xff, 0xfe}},
		{"array", []byte(`[1,2,3]`)},
		{"wrong types", []byte(`{"status": 7, "heartbeat": "yesterday"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			writeRaw(t, root, chan1, msgID, tt.data)
			// A claim that does not parse is a working claim with no owner
			// whose heartbeat is the file's mtime: recent, it is held (an
			// NFS client may show a claim short while its owner replaces
			// it); unchanged for the grace period, it is taken over.
			touch(t, claimFile(root, chan1, msgID), t0.Add(-grace/2))
			s := store(root, owner("vm-1", "a"), newClock(t0))
			if c, out := acquire(t, s, chan1, msgID); out != claim.Held {
				t.Fatalf("recent: got %v %+v, want held", out, c)
			}
			touch(t, claimFile(root, chan1, msgID), t0.Add(-2*grace))
			c, out := acquire(t, s, chan1, msgID)
			if out != claim.Acquired || c.Owner != s.Self || c.Takeovers != 1 || c.Note != "taken over from  pid 0" {
				t.Fatalf("got %v %+v, want taken over", out, c)
			}
			if onDisk := readClaim(t, root, chan1, msgID); onDisk.Owner != s.Self {
				t.Errorf("file owned by %+v", onDisk.Owner)
			}
			noDotFiles(t, claimDir(root, chan1))
		})
	}
}

// TestForeignClaim: JSON that parses but is not a claim is treated as a
// working claim last touched at its mtime, so after the grace period it is
// taken over and the message is answered.
func TestForeignClaim(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"null", `null`},
		{"empty object", `{}`},
		{"unknown status", `{"message":"` + msgID + `","status":"bogus"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			writeRaw(t, root, chan1, msgID, []byte(tt.data))
			touch(t, claimFile(root, chan1, msgID), t0)
			s := store(root, owner("vm-1", "a"), newClock(t0.Add(2*grace)))
			c, out := acquire(t, s, chan1, msgID)
			if out != claim.Acquired {
				t.Errorf("claim %s: got %v with status %q, want taken over; the message would never be answered", tt.data, out, c.Status)
			}
		})
	}
}

func TestBadNames(t *testing.T) {
	tests := []struct {
		name        string
		agent, ch   string
		id          string
		wantBadName bool // the error wraps tree.ErrBadName
	}{
		{name: "channel climbs", agent: agent, ch: "../x", id: msgID, wantBadName: true},
		{name: "channel deep climb", agent: agent, ch: "../../../../tmp", id: msgID, wantBadName: true},
		{name: "channel empty", agent: agent, ch: "", id: msgID, wantBadName: true},
		{name: "channel dot", agent: agent, ch: ".", id: msgID, wantBadName: true},
		{name: "channel dash", agent: agent, ch: "-rf", id: msgID, wantBadName: true},
		{name: "agent slash", agent: "a/b", ch: chan1, id: msgID, wantBadName: true},
		{name: "agent dotdot", agent: "..", ch: chan1, id: msgID, wantBadName: true},
		{name: "agent empty", agent: "", ch: chan1, id: msgID, wantBadName: true},
		{name: "id climbs", agent: agent, ch: chan1, id: "../../../x"},
		{name: "id slash", agent: agent, ch: chan1, id: "a/b"},
		{name: "id NUL", agent: agent, ch: chan1, id: "a\x00b"},
		{name: "id empty", agent: agent, ch: chan1, id: ""},
		{name: "id dot-file", agent: agent, ch: chan1, id: ".hidden"},
		{name: "id dotdot", agent: agent, ch: chan1, id: ".."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := t.TempDir()
			root := tree.Root(filepath.Join(top, "a", "b", "root"))
			if err := os.MkdirAll(string(root), 0o777); err != nil {
				t.Fatal(err)
			}
			o := owner("vm-1", "a")
			o.Agent = tt.agent
			s := store(root, o, newClock(t0))
			ops := map[string]func() error{
				"acquire":   func() error { _, _, err := s.Acquire(tt.ch, tt.id); return err },
				"reserve":   func() error { _, _, err := s.ReserveReply(tt.ch, tt.id, "msg-20260111-163400-codex-aaaa"); return err },
				"heartbeat": func() error { return s.Heartbeat(tt.ch, tt.id) },
				"finish":    func() error { return s.Finish(tt.ch, tt.id, claim.Replied, "", "") },
				"read":      func() error { _, err := s.Read(tt.ch, tt.id); return err },
			}
			for _, op := range slices.Sorted(func(yield func(string) bool) {
				for k := range ops {
					if !yield(k) {
						return
					}
				}
			}) {
				err := ops[op]()
				if err == nil {
					t.Errorf("%s: no error", op)
				} else if tt.wantBadName && !errors.Is(err, tree.ErrBadName) {
					t.Errorf("%s: %v, want a tree.ErrBadName", op, err)
				}
			}
			// Nothing anywhere but the empty root, or claims/CHANNEL/AGENT
			// folders for a valid channel and agent.
			filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					t.Error(err)
					return nil
				}
				rel, _ := filepath.Rel(top, p)
				switch {
				case !d.IsDir():
					t.Errorf("file created: %s", rel)
				case rel == "." || rel == "a" || rel == filepath.Join("a", "b") || rel == filepath.Join("a", "b", "root"):
				case tree.ValidName(tt.ch) && tree.ValidName(tt.agent) &&
					slices.Contains([]string{"claims", filepath.Join("claims", tt.ch), filepath.Join("claims", tt.ch, tt.agent)},
						strings.TrimPrefix(rel, filepath.Join("a", "b", "root")+string(filepath.Separator))):
				default:
					t.Errorf("folder created: %s", rel)
				}
				return nil
			})
		})
	}
}

// mountBindfs mounts back at a new folder (internal/bindfstest).
func mountBindfs(t *testing.T, back string, opts ...string) string {
	t.Helper()
	return bindfstest.Mount(t, back, opts...)
}

// TestTwoHosts runs the protocol through two bindfs mounts of one folder,
// as two hosts sharing an NFS tree: each mount has its own kernel caches
// (attributes and names, 1 s by default), so neither sees the other's
// changes through its own cache.
func TestTwoHosts(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []string
	}{
		{"defaults", nil},
		// Long-lived caches, as NFS's acregmin/acdirmin.
		{"nfs-like caches", []string{"-o", "attr_timeout=3,entry_timeout=30,negative_timeout=30"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			back := t.TempDir()
			rootA := tree.Root(mountBindfs(t, back, mode.opts...))
			rootB := tree.Root(mountBindfs(t, back, mode.opts...))
			clk := newClock(time.Now().UTC())
			stores := []*claim.Store{
				store(rootA, owner("vm-a", "a1"), clk),
				store(rootB, owner("vm-b", "b1"), clk),
				store(rootA, owner("vm-a", "a2"), clk),
				store(rootB, owner("vm-b", "b2"), clk),
			}
			const messages = 50

			t.Run("fresh", func(t *testing.T) {
				for m := range messages {
					id := fmt.Sprintf("msg-20260111-163315-claude-%04x", m)
					got := race(len(stores), func(i int) attempt {
						c, out, err := stores[i].Acquire(chan1, id)
						return attempt{c, out, err}
					})
					checkOneWinner(t, tree.Root(back), chan1, id, stores, got)
					checkReserve(t, stores, id)
					if t.Failed() {
						t.Fatalf("message %d", m)
					}
				}
			})

			t.Run("all messages both ways", func(t *testing.T) {
				// Two watchers walking the same backlog, one from each host.
				ids := make([]string, messages)
				for m := range ids {
					ids[m] = fmt.Sprintf("msg-20260111-163316-claude-%04x", m)
				}
				got := race(2, func(i int) []attempt {
					var res []attempt
					for _, id := range ids {
						c, out, err := stores[i].Acquire(chan1, id)
						res = append(res, attempt{c, out, err})
					}
					return res
				})
				for m, id := range ids {
					checkOneWinner(t, tree.Root(back), chan1, id, stores[:2], []attempt{got[0][m], got[1][m]})
				}
			})

			t.Run("stale", func(t *testing.T) {
				for m := range messages {
					id := fmt.Sprintf("msg-20260111-163317-claude-%04x", m)
					writeClaim(t, tree.Root(back), chan1, claim.Claim{
						Message: id, Channel: chan1, Owner: owner("vm-ghost", "ghost"), Status: claim.Working,
						Claimed: clk.Now().Add(-2 * grace), Heartbeat: clk.Now().Add(-2 * grace),
					})
					got := race(len(stores), func(i int) attempt {
						c, out, err := stores[i].Acquire(chan1, id)
						return attempt{c, out, err}
					})
					checkOneWinner(t, tree.Root(back), chan1, id, stores, got)
					if t.Failed() {
						t.Fatalf("message %d", m)
					}
				}
			})

			t.Run("live owner", func(t *testing.T) {
				// The owner on host A heartbeats (its claim changes size as the
				// time's digits do) while host B keeps trying: B must never
				// take a live claim, and the owner must never lose it.
				const id = "msg-20260111-163318-claude-0001"
				ownerClk := newClock(clk.Now())
				a := store(rootA, owner("vm-a", "live"), ownerClk)
				b := stores[1]
				if _, out := acquire(t, a, chan1, id); out != claim.Acquired {
					t.Fatalf("owner: %v", out)
				}
				var stop atomic.Bool
				var wg sync.WaitGroup
				var beats atomic.Int64
				wg.Go(func() {
					for i := 1; !stop.Load(); i++ {
						ownerClk.Add(time.Duration(i%1000) * time.Microsecond)
						if err := a.Heartbeat(chan1, id); err != nil {
							t.Errorf("owner's heartbeat: %v", err)
							return
						}
						beats.Add(1)
					}
				})
				deadline := time.Now().Add(time.Second)
				var tries int
				for time.Now().Before(deadline) && !t.Failed() {
					tries++
					c, out, err := b.Acquire(chan1, id)
					if err != nil {
						t.Errorf("B: %v", err)
						break
					}
					if out != claim.Held {
						t.Errorf("B: got %v %+v, want held", out, c)
						break
					}
				}
				stop.Store(true)
				wg.Wait()
				t.Logf("%d tries against %d heartbeats", tries, beats.Load())
			})
			noDotFiles(t, claimDir(tree.Root(back), chan1))
		})
	}
}

// checkReserve makes every store reserve the reply of id at once: all must
// agree on one id, and one of them reserved it.
func checkReserve(t *testing.T, stores []*claim.Store, id string) {
	t.Helper()
	type res struct {
		id    string
		fresh bool
		err   error
	}
	got := race(len(stores), func(i int) res {
		r, f, err := stores[i].ReserveReply(chan1, id, "reply-"+stores[i].Self.Instance)
		return res{r, f, err}
	})
	var fresh int
	for i, g := range got {
		if g.err != nil {
			t.Errorf("%s: ReserveReply: %v", stores[i].Self.Instance, g.err)
			continue
		}
		if g.fresh {
			fresh++
		}
		if g.id != got[0].id {
			t.Errorf("%s: reply %q, %s: reply %q", stores[i].Self.Instance, g.id, stores[0].Self.Instance, got[0].id)
		}
	}
	if fresh != 1 {
		t.Errorf("%s: %d fresh reply tokens, want 1", id, fresh)
	}
}

// TestBadIDChar: a bad message id names the character it refuses, not the
// first byte of its encoding.
func TestBadIDChar(t *testing.T) {
	s := store(tree.Root(t.TempDir()), owner("vm-1", "a"), newClock(t0))
	_, err := s.Read(chan1, "msg-caf\u00e9")
	if want := `'é' (U+00E9) at byte 7`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Read(msg-café) = %v; want it to say %s", err, want)
	}
}
