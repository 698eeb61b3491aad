package watcher_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
	"github.com/collabdev/collab/presence"
)

// statusOf is the delivery status of message m for agent.
func statusOf(t testing.TB, root tree.Root, m channel.Message, who string) delivery.Addressee {
	t.Helper()
	st, err := delivery.Of(root, chName, m.ID, delivery.Options{Host: testHost})
	if err != nil {
		t.Fatalf("status of %s: %v", m.ID, err)
	}
	for _, a := range st.Addressees {
		if a.Agent == who {
			return a
		}
	}
	t.Fatalf("status of %s: %s is not an addressee: %+v", m.ID, who, st)
	return delivery.Addressee{}
}

// waitState waits until m is in state for agent, and returns its status.
func waitState(t testing.TB, root tree.Root, m channel.Message, who, state string) delivery.Addressee {
	t.Helper()
	var a delivery.Addressee
	waitFor(t, m.Content.Text+" "+state, func() bool {
		a = statusOf(t, root, m, who)
		return a.State == state
	})
	return a
}

// TestDeliveryStates: every state of a message for its addressee, reached
// with a real watcher (and a fake model CLI), as status reads it from
// the tree.
func TestDeliveryStates(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	deliveryStates(t, root, root)
}

// TestDeliveryStatesFromAnotherHost: the same states, as a sender on
// another host sees them (a second bindfs mount of the tree, whose
// attributes are cached like NFS's): nothing depends on the watcher's
// memory.
func TestDeliveryStatesFromAnotherHost(t *testing.T) {
	t.Parallel()
	backing := t.TempDir()
	hostA := tree.Root(bindfstest.Mount(t, backing))
	hostB := tree.Root(bindfstest.Mount(t, backing, "-o", "attr_timeout=1,entry_timeout=1,negative_timeout=1"))
	deliveryStates(t, hostA, hostB)
}

// deliveryStates runs a watcher on watchRoot and reaches every state of a
// message, posted and looked at on root.
func deliveryStates(t *testing.T, watchRoot, root tree.Root) {
	release := make(chan struct{})
	block := blockUntil(release)
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		// A prompt holds the messages before its own: the last
		// marker wins.
		switch text := c.Req.Prompt; {
		case strings.Contains(text, "please fail"):
			return modelcli.Response{}, errors.New("model exploded")
		case strings.Contains(text, "please block"):
			return block(c)
		}
		return modelcli.Response{Text: "reply to " + c.msgID()}, nil
	}}
	cfg := config(watchRoot, r)
	cfg.MaxHops = 3
	h := start(t, cfg)

	slow := send(t, root, agent, "please block")
	a := waitState(t, root, slow, agent, delivery.Running)
	if a.Job != jobFor(root, agent, slow.Key()) || a.Host != testHost || a.PID == 0 {
		t.Errorf("running: %+v, want job %s on %s", a, jobFor(root, agent, slow.Key()), testHost)
	}
	queued := send(t, root, agent, "and then this")
	a = waitState(t, root, queued, agent, delivery.Seen)
	if a.Host != testHost {
		t.Errorf("seen: %+v, want host %s", a, testHost)
	}
	waitFor(t, "a backlog of 2 in the heartbeat", func() bool {
		p := readPresence(t, root, agent)
		return p.Backlog == 2 && p.OldestUnanswered == presence.FormatTime(slow.Time())
	})
	close(release)
	a = waitState(t, root, slow, agent, delivery.Answered)
	if a.Reply == "" || a.Latency <= 0 {
		t.Errorf("answered: %+v, want a reply id and a latency", a)
	}
	waitState(t, root, queued, agent, delivery.Answered)
	waitFor(t, "an empty backlog in the heartbeat", func() bool {
		p := readPresence(t, root, agent)
		return p.Backlog == 0 && p.OldestUnanswered == ""
	})

	failing := send(t, root, agent, "please fail")
	a = waitState(t, root, failing, agent, delivery.Failed)
	if !strings.Contains(a.Error, "model exploded") {
		t.Errorf("failed: %+v, want the CLI's error", a)
	}

	deep := post(t, root, channel.Message{To: agent, Content: channel.Content{Text: "deep"}, Metadata: channel.Metadata{Hops: 3}})
	a = waitState(t, root, deep, agent, delivery.Refused)
	if a.Guard != delivery.GuardMaxHops {
		t.Errorf("refused: %+v, want guard %s", a, delivery.GuardMaxHops)
	}

	lost := send(t, root, "nobody", "anyone there?")
	if a := statusOf(t, root, lost, "nobody"); a.State != delivery.Undeliverable {
		t.Errorf("to an unknown agent: %+v, want %s", a, delivery.Undeliverable)
	}
	all := send(t, root, channel.Broadcast, "hello everyone")
	if st, err := delivery.Of(root, chName, all.ID, delivery.Options{}); err != nil || !st.Broadcast || len(st.Addressees) != 0 {
		t.Errorf("broadcast: %+v, %v; want no addressee", st, err)
	}

	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	later := post(t, root, channel.Message{To: "all", Content: channel.Content{Text: "@" + agent + " are you there?"}})
	a = statusOf(t, root, later, agent)
	if a.State != delivery.Waiting || a.Presence != presence.Offline {
		t.Errorf("watcher stopped: %+v, want %s with presence %s", a, delivery.Waiting, presence.Offline)
	}
}

// TestDeliveryRefusedByTrust: a message the trust policy refuses is
// refused by "trust" in its seen file, though no claim is ever made.
func TestDeliveryRefusedByTrust(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	cfg := config(root, &fakeRunner{})
	cfg.Trust = signing.Signed
	start(t, cfg)
	m := send(t, root, agent, "unsigned, so refused")
	a := waitState(t, root, m, agent, delivery.Refused)
	if a.Guard != delivery.GuardTrust || a.Error == "" {
		t.Errorf("refused: %+v, want guard %s and why", a, delivery.GuardTrust)
	}
	if _, err := readClaim(root, agent, m.ID); err == nil {
		t.Errorf("a refused message was claimed")
	}
}
