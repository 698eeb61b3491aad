package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/task"
)

func dialAs(t testing.TB, url, agent string, signer *signing.Signer) *Client {
	t.Helper()
	c, err := Dial(context.Background(), natsbus.Options{URL: url}, Config{Agent: agent, Signer: signer, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestRemoteDocs: a client's doc writes land on the mount; a stale
// --if-version is a conflict carrying the current version.
func TestRemoteDocs(t *testing.T) {
	root, url, signer := bridgeOnLoopback(t)
	c := dialAs(t, url, "a", signer)
	ctx := context.Background()
	w, err := c.Doc(ctx, bridge.DocRequest{Action: "write", Channel: "dev", File: "plan.md", Content: "one\n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Doc(ctx, bridge.DocRequest{Action: "append", Channel: "dev", File: "plan.md", Content: "two\n"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root.Docs("dev"), "plan.md"))
	if err != nil || string(data) != "one\ntwo\n" {
		t.Fatalf("on the mount: %q %v", data, err)
	}
	r, err := c.Doc(ctx, bridge.DocRequest{Action: "write", Channel: "dev", File: "plan.md", Content: "x\n", IfVersion: w.Version})
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeConflict || r.Version != documents.Version("one\ntwo\n") {
		t.Fatalf("stale write: %v %+v", err, r)
	}
	rd, err := c.Doc(ctx, bridge.DocRequest{Action: "read", Channel: "dev", File: "plan.md"})
	if err != nil || rd.Doc.Content != "one\ntwo\n" {
		t.Fatalf("read: %+v %v", rd, err)
	}
}

// TestRemoteTaskEvents: remote agents' claims race through the bridge
// (one wins, the other is refused as claimed), concurrent checkpoints of
// the owner are all kept (a taken number is signed again), and every
// event on the mount verifies as its agent's.
func TestRemoteTaskEvents(t *testing.T) {
	root, url, signer := bridgeOnLoopback(t)
	bk, err := signing.NewKey(filepath.Join(t.TempDir(), "b.key"), "b", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(root.Keys())
	if err := ring.Trust("b", bk.PublicKey()); err != nil {
		t.Fatal(err)
	}
	a, b := dialAs(t, url, "a", signer), dialAs(t, url, "b", bk)
	ctx := context.Background()
	for i := range 5 {
		if _, err := a.Task(ctx, bridge.TaskRequest{Action: "add", Channel: "dev", Title: fmt.Sprintf("task %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 5; i++ {
		id := task.FormatID(i)
		var wins, refused int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range []*Client{a, b} {
			wg.Go(func() {
				_, err := c.TaskEvent(ctx, "dev", id, task.EvClaimed, "", task.Checkpoint{})
				var re *RefusedError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case errors.As(err, &re) && re.Refusal == "claimed":
					refused++
				default:
					t.Errorf("claim %s: %v", id, err)
				}
			})
		}
		wg.Wait()
		if wins != 1 || refused != 1 {
			t.Fatalf("%s: %d wins, %d refused", id, wins, refused)
		}
	}
	// The owner's concurrent checkpoints: all kept.
	r, err := a.Task(ctx, bridge.TaskRequest{Action: "show", Channel: "dev", ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	ownerName := r.Task.Owner
	owner := map[string]*Client{"a": a, "b": b}[ownerName]
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if _, err := owner.TaskEvent(ctx, "dev", "t1", task.EvCheckpoint, fmt.Sprintf("step %d", i), task.Checkpoint{Type: task.CkProgress}); err != nil {
				t.Errorf("checkpoint %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if _, err := owner.TaskEvent(ctx, "dev", "t1", task.EvDone, "finished", task.Checkpoint{}); err != nil {
		t.Fatal(err)
	}
	board, _ := task.New(root, "dev")
	board.Verifier = signing.NewVerifier(ring)
	tk, evs, err := board.Events("t1")
	if err != nil || tk.Status != task.Done || len(evs) != 6 || tk.Unverified != 0 {
		t.Fatalf("on the mount: %+v, %d events, %v", tk, len(evs), err)
	}
	for _, e := range evs {
		if e.Verdict != signing.Verified || e.Agent != ownerName {
			t.Errorf("event %d: %s by %s", e.Seq, e.Verdict, e.Agent)
		}
	}
	// No key: refused before anything is sent.
	nokey := dialAs(t, url, "a", nil)
	if _, err := nokey.TaskEvent(ctx, "dev", "t2", task.EvClaimed, "", task.Checkpoint{}); !errors.Is(err, ErrNoKey) {
		t.Fatalf("without a key: %v", err)
	}
}
