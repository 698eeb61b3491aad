package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// TestClaimsRaceMountAndRemote: a Store over a bridge on loopback NATS (a
// remote watcher, its Root a folder that does not exist) and a Store on
// the files (a mounted watcher) of one agent race to Acquire the same 200
// messages, then to reserve their replies: exactly one wins each, and the
// files say so.
func TestClaimsRaceMountAndRemote(t *testing.T) {
	root, url, signer := bridgeOnLoopback(t)
	c, err := Dial(context.Background(), natsbus.Options{URL: url}, Config{Agent: "a", Signer: signer, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	self := func(host string) claim.Owner {
		o := claim.Self("a")
		o.Host, o.BootID = host, "boot-"+host
		return o
	}
	stores := []*claim.Store{
		{Root: "/nonexistent/collab", Self: self("remote"), Signer: signer, Dirs: c.ClaimDirs()},
		{Root: root, Self: self("mount"), Signer: signer},
	}
	// paired returns copies of the two stores that both wait, at their
	// first reading of the clock (after their reads, just before their
	// first publish), until the other is there too: each publish is raced.
	// The mount's waits a little more for some messages, so that both win
	// some.
	paired := func(i int) [2]*claim.Store {
		var both sync.WaitGroup
		both.Add(2)
		var out [2]*claim.Store
		for k, s := range stores {
			cp := *s
			var once sync.Once
			cp.Now = func() time.Time {
				once.Do(func() {
					both.Done()
					both.Wait()
					if k == 1 && i%2 == 0 {
						time.Sleep(20 * time.Millisecond)
					}
				})
				return time.Now()
			}
			out[k] = &cp
		}
		return out
	}
	const n = 200
	id := func(i int) string { return fmt.Sprintf("msg-20261125-010000-b-%04x", i) }
	type result struct {
		out claim.Outcome
		err error
	}
	var got [n][2]result
	var replies [n][2]struct {
		id    string
		fresh bool
		err   error
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // messages raced at once: each race is close
	for i := range n {
		acq, res := paired(i), paired(i)
		for k := range 2 {
			wg.Go(func() {
				if k == 0 {
					sem <- struct{}{}
					defer func() { <-sem }()
				}
				_, out, err := acq[k].Acquire("dev", id(i))
				got[i][k] = result{out, err}
				rid, fresh, err := res[k].ReserveReply("dev", id(i), fmt.Sprintf("msg-20261125-010001-a-%04x", 2*i+k))
				replies[i][k].id, replies[i][k].fresh, replies[i][k].err = rid, fresh, err
			})
		}
	}
	wg.Wait()
	observer := claim.Store{Root: root, Self: claim.Owner{Agent: "a", Instance: "observer"}}
	wins, tokens := [2]int{}, 0
	for i := range n {
		winner := -1
		for k := range 2 {
			r := got[i][k]
			switch {
			case r.err != nil:
				t.Fatalf("%s: store %d: %v", id(i), k, r.err)
			case r.out == claim.Acquired && winner >= 0:
				t.Fatalf("%s: two winners", id(i))
			case r.out == claim.Acquired:
				winner = k
			case r.out != claim.Held:
				t.Fatalf("%s: store %d: %v", id(i), k, r.out)
			}
		}
		if winner < 0 {
			t.Fatalf("%s: no winner", id(i))
		}
		wins[winner]++
		on, err := observer.Read("dev", id(i))
		if err != nil || on.Owner.Instance != stores[winner].Self.Instance || on.Takeovers != 0 {
			t.Fatalf("%s on the files: %+v %v", id(i), on, err)
		}
		if _, err := os.Stat(filepath.Join(root.AgentClaims("dev", "a"), id(i)+".1.json")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: a second generation: %v", id(i), err)
		}
		r0, r1 := replies[i][0], replies[i][1]
		if r0.err != nil || r1.err != nil || r0.id != r1.id || r0.fresh == r1.fresh {
			t.Fatalf("%s: reply tokens %+v %+v", id(i), r0, r1)
		}
		if r0.fresh {
			tokens++
		}
		tok, err := observer.Token("dev", id(i))
		if err != nil || tok.Reply != r0.id {
			t.Fatalf("%s: token on the files %+v %v, want %s", id(i), tok, err, r0.id)
		}
	}
	t.Logf("claims won: remote %d, mount %d; reply tokens won: remote %d", wins[0], wins[1], tokens)
}

// TestClaimDirsErrors: no bridge is an error wrapping ErrUnreachable, so
// a watcher's Acquire fails (and it tries again later) rather than acting
// without a claim; conflict is fs.ErrExist and not-found fs.ErrNotExist.
func TestClaimDirsErrors(t *testing.T) {
	f := &fakeBridge{answer: down}
	c := newTestClient(t, f, t.TempDir())
	s := &claim.Store{Root: "/nonexistent/collab", Self: claim.Self("a"), Signer: c.cfg.Signer, Dirs: c.ClaimDirs()}
	if _, _, err := s.Acquire("dev", "msg-20261125-010000-b-0001"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("acquire with no bridge: %v", err)
	}
	if _, _, err := s.ReserveReply("dev", "msg-20261125-010000-b-0001", "msg-20261125-010001-a-0001"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("reserve with no bridge: %v", err)
	}
	if len(f.sent) == 0 || f.sent[0] != "collab.bridge.v1.claimfs.a" {
		t.Fatalf("sent %v", f.sent)
	}
	d, err := c.ClaimDirs().OpenClaims("dev", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	f.answer = refuse("conflict")
	if err := d.Publish("m.json", []byte("{}"), 0o666); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("conflict: %v", err)
	}
	f.answer = refuse("not-found")
	if _, _, err := d.ReadFile("m.json", 100); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("not-found: %v", err)
	}
	if _, err := c.ClaimDirs().OpenClaims("dev", "b", true); err == nil {
		t.Fatal("opened another agent's claims")
	}
}

// BenchmarkRemoteAcquire: one claim acquired and finished through a bridge
// on loopback NATS into a tree on the local disk.
func BenchmarkRemoteAcquire(b *testing.B) {
	_, url, signer := bridgeOnLoopback(b)
	c, err := Dial(context.Background(), natsbus.Options{URL: url}, Config{Agent: "a", Signer: signer, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s := &claim.Store{Root: "/nonexistent/collab", Self: claim.Self("a"), Signer: signer, Dirs: c.ClaimDirs()}
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("msg-20261125-010000-b-%04x", i)
		if _, out, err := s.Acquire("dev", id); err != nil || out != claim.Acquired {
			b.Fatal(out, err)
		}
		if err := s.Finish("dev", id, claim.Replied, "", ""); err != nil {
			b.Fatal(err)
		}
	}
}
