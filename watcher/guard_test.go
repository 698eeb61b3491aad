package watcher_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestMaxHops: a message as deep as MaxHops is not answered; its thread
// gets exactly one notice, however many such messages it holds.
func TestMaxHops(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.MaxHops = 3
	start(t, cfg)

	threadA := channel.NewID("alice", time.Now().Add(-time.Hour), "aaaa")
	threadB := channel.NewID("alice", time.Now().Add(-time.Hour), "bbbb")
	deep := func(thread string, hops int) channel.Message {
		return post(t, root, channel.Message{
			From: "claude", To: agent, Content: channel.Content{Text: "still going, hops " + strconv.Itoa(hops)},
			Metadata: channel.Metadata{Hops: hops, InReplyTo: thread, Thread: thread},
		})
	}
	stopped := []channel.Message{deep(threadA, 3), deep(threadA, 4), deep(threadA, 3), deep(threadB, 9)}
	under := deep(threadB, 2)
	waitReplies(t, root, under.ID)
	for _, m := range stopped {
		c := waitClaim(t, root, agent, m.ID)
		if c.Status != claim.Skipped || !strings.Contains(c.Note, "max-hops") {
			t.Errorf("claim of a message at hops %d = %s %q, want %s by max-hops", m.Metadata.Hops, c.Status, c.Note, claim.Skipped)
		}
	}
	waitSettled(t, root, agent)

	msgs := messages(t, root)
	for _, m := range stopped {
		if n := len(repliesTo(msgs, m.ID)); n != 0 {
			t.Errorf("message at hops %d: %d replies, want 0", m.Metadata.Hops, n)
		}
		if n := len(r.callsFor(m.ID)); n != 0 {
			t.Errorf("message at hops %d: CLI ran %d times, want 0", m.Metadata.Hops, n)
		}
	}
	if rs := repliesTo(msgs, under.ID); len(rs) != 1 || rs[0].Metadata.Hops != 3 {
		t.Errorf("message at hops 2: replies %+v, want one at hops 3", rs)
	}
	perThread := map[string]int{}
	for _, n := range notices(msgs) {
		perThread[n.Metadata.Thread]++
		var guard string
		if err := json.Unmarshal(n.Metadata.Extra["guard"], &guard); err != nil || guard != "max-hops" {
			t.Errorf("notice metadata.guard = %s, want \"max-hops\"", n.Metadata.Extra["guard"])
		}
		if n.From != agent || n.To != channel.Broadcast {
			t.Errorf("notice from %s to %s, want from %s to all", n.From, n.To, agent)
		}
		if channel.Mentions(n.Content.Text, "claude") || n.IsFor("claude") || n.IsFor("alice") {
			t.Errorf("notice %q wakes someone", n.Content.Text)
		}
	}
	if perThread[threadA] != 1 || perThread[threadB] != 1 || len(perThread) != 2 {
		t.Errorf("notices per thread = %v, want one for each of %s and %s", perThread, threadA, threadB)
	}
}

// TestMaxHopsNoticeSurvivesRestart: the one notice per thread is
// remembered across a restart.
func TestMaxHopsNoticeSurvivesRestart(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	cfg := config(root, &fakeRunner{})
	cfg.MaxHops = 2
	thread := channel.NewID("alice", time.Now().Add(-time.Hour), "cccc")
	deep := func() channel.Message {
		return post(t, root, channel.Message{From: "claude", To: agent, Content: channel.Content{Text: "deep"},
			Metadata: channel.Metadata{Hops: 2, Thread: thread, InReplyTo: thread}})
	}
	h := start(t, cfg)
	waitClaim(t, root, agent, deep().ID)
	waitFor(t, "the notice", func() bool { return len(notices(messages(t, root))) == 1 })
	h.stop()
	start(t, cfg)
	waitClaim(t, root, agent, deep().ID)
	waitSettled(t, root, agent)
	if n := len(notices(messages(t, root))); n != 1 {
		t.Errorf("%d notices for one thread across a restart, want 1", n)
	}
}

// TestAgentsStopByThemselves: two agents whose models always hand over to
// each other stop at the hop limit, and then it is quiet.
func TestAgentsStopByThemselves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		const maxHops = 4
		handOver := func(to string) *fakeRunner {
			return &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
				return modelcli.Response{Text: "@" + to + " over to you"}, nil
			}}
		}
		cfgA, cfgB := config(root, handOver("b")), config(root, handOver("a"))
		cfgA.Agent, cfgB.Agent = "a", "b"
		cfgA.MaxHops, cfgB.MaxHops = maxHops, maxHops
		cfgA.PairRate, cfgB.PairRate = 0, 0 // defaults
		cfgA.Rate, cfgB.Rate = 0, 0
		ha, hb := start(t, cfgA), start(t, cfgB)

		send(t, root, "all", "@a what do you and b think?")
		// The notice, then the report to the refused message's sender: the
		// loop posts both in one turn, which the test may see half done.
		waitFor(t, "the guard notice and the report", func() bool {
			msgs := messages(t, root)
			return len(notices(msgs)) > 0 && slices.ContainsFunc(msgs, func(m channel.Message) bool { return m.IsDeliveryReport() })
		})
		n := len(messages(t, root))
		holds(t, 20*cfgA.Poll, "the channel is quiet", func() bool { return len(messages(t, root)) == n })
		ha.stop()
		hb.stop()

		var msgs, reports []channel.Message
		for _, m := range messages(t, root) {
			if m.IsDeliveryReport() {
				reports = append(reports, m) // to the sender of the message refused
				continue
			}
			msgs = append(msgs, m)
		}
		if len(reports) != 1 {
			t.Errorf("%d delivery reports, want 1", len(reports))
		}
		if len(msgs) > maxHops+2 {
			t.Errorf("%d messages, want at most %d (the question, %d replies, one notice)", len(msgs), maxHops+2, maxHops)
		}
		if nn := len(notices(msgs)); nn != 1 {
			t.Errorf("%d notices, want 1", nn)
		}
		for _, m := range msgs {
			if m.Type != "notice" && m.Metadata.Hops > maxHops {
				t.Errorf("%s posted at hops %d > %d", m.From, m.Metadata.Hops, maxHops)
			}
			t.Logf("%s → %s hops %d %s: %q", m.From, m.To, m.Metadata.Hops, m.Type, m.Content.Text)
		}
	})
}

// TestRate: with Rate 2 the CLI runs twice a minute; further messages wait
// for the window, and are answered when it moves on.
func TestRate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		var offset atomic.Int64 // the watcher's clock is the bubble's, plus jumps
		now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		r := &fakeRunner{}
		cfg := config(root, r)
		cfg.Rate = 2
		cfg.Now = now
		h := start(t, cfg)

		var sent []channel.Message
		for i := range 5 {
			sent = append(sent, send(t, root, agent, "message "+strconv.Itoa(i)))
		}
		for k, want := range []int{2, 4, 5} {
			waitFor(t, strconv.Itoa(want)+" CLI runs", func() bool { return len(r.Calls()) >= want })
			if want < 5 {
				// The watcher is idle with messages queued, and says why it
				// waits (once a minute of its clock): only then does "no more
				// runs" test the limit rather than a busy watcher.
				waitFor(t, "the rate limit", func() bool { return len(h.logs.find("rate limit reached; messages wait")) == k+1 })
			}
			holds(t, 10*cfg.Poll, "no more runs in this minute", func() bool { return len(r.Calls()) == want })
			if want < 5 {
				if s := readPresence(t, root, agent); s.Queue != 5-want {
					t.Errorf("presence queue = %d, want %d waiting", s.Queue, 5-want)
				}
			}
			offset.Add(int64(61 * time.Second))
		}
		waitReplies(t, root, ids(sent...)...)
		// Oldest first, in channel order (within a millisecond, by name).
		var want []string
		for _, m := range messages(t, root) {
			if m.From != agent {
				want = append(want, m.ID)
			}
		}
		if got := r.calledIDs(); !slices.Equal(got, want) {
			t.Errorf("runs in order %v, want channel order %v", got, want)
		}
	})
}

// TestPairRate: in agent chains (hops ≥ 1) one sender gets at most
// PairRate replies a minute; the rest are stopped with a notice. People's
// messages (hops 0) do not count.
func TestPairRate(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.PairRate = 2
	start(t, cfg)

	var bot []channel.Message
	for i := range 4 {
		bot = append(bot, post(t, root, channel.Message{From: "bot", To: agent,
			Content:  channel.Content{Text: "chain message " + strconv.Itoa(i)},
			Metadata: channel.Metadata{Hops: 1}}))
	}
	var people []channel.Message
	for i := range 3 {
		people = append(people, post(t, root, channel.Message{From: "bot", To: agent,
			Content: channel.Content{Text: "hops 0 message " + strconv.Itoa(i)}}))
	}
	other := post(t, root, channel.Message{From: "claude", To: agent, Content: channel.Content{Text: "other sender"},
		Metadata: channel.Metadata{Hops: 1}})
	waitReplies(t, root, append(ids(people...), other.ID)...)
	for _, m := range bot {
		waitClaim(t, root, agent, m.ID)
	}
	waitSettled(t, root, agent)
	msgs := messages(t, root)
	var answered, stopped int
	for _, m := range bot {
		c, _ := readClaim(root, agent, m.ID)
		switch n := len(repliesTo(msgs, m.ID)); {
		case n == 1 && c.Status == claim.Replied:
			answered++
		case n == 0 && c.Status == claim.Skipped && strings.Contains(c.Note, "pair-rate"):
			stopped++
		default:
			t.Errorf("%q: %d replies, claim %s %q", m.Content.Text, n, c.Status, c.Note)
		}
	}
	if answered != 2 || stopped != 2 {
		t.Errorf("chain messages from one sender: %d answered, %d stopped; want 2 and 2", answered, stopped)
	}
	if n := len(notices(msgs)); n != 2 {
		t.Errorf("%d notices, want 2 (one per stopped thread)", n)
	}
}

// TestNoReply: a model that answers NO_REPLY posts nothing; the claim says
// skipped.
func TestNoReply(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		if strings.Contains(c.Req.Prompt, "thanks!") {
			return modelcli.Response{Text: "NO_REPLY"}, nil
		}
		return modelcli.Response{Text: "you are welcome"}, nil
	}}
	cfg := config(root, r)
	cfg.Context = -1
	start(t, cfg)
	thanks := send(t, root, agent, "thanks!")
	c := waitClaim(t, root, agent, thanks.ID)
	sentinel := send(t, root, agent, "a question")
	waitReplies(t, root, sentinel.ID)
	if c.Status != claim.Skipped || c.Reply != "" {
		t.Errorf("claim = %s reply %q, want %s and no reply", c.Status, c.Reply, claim.Skipped)
	}
	msgs := messages(t, root)
	if n := len(repliesTo(msgs, thanks.ID)); n != 0 {
		t.Errorf("%d replies to a NO_REPLY answer, want 0", n)
	}
	for _, m := range msgs {
		if strings.Contains(m.Content.Text, "NO_REPLY") {
			t.Errorf("NO_REPLY was posted: %+v", m)
		}
	}
}
