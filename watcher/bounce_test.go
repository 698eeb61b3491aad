package watcher_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/inbox"
	"github.com/collabdev/collab/internal/workspace/registry"
	"github.com/collabdev/collab/watcher"
)

// bounceConfig is config with fast delivery-report sweeps.
func bounceConfig(root tree.Root, r watcher.Runner) watcher.Config {
	cfg := config(root, r)
	cfg.BounceEvery, cfg.BounceGrace = 20*time.Millisecond, 100*time.Millisecond
	return cfg
}

// registerClaude registers the agent claude, which no watcher serves: a
// message to it waits, and may expire, rather than being undeliverable.
func registerClaude(t testing.TB, root tree.Root) {
	t.Helper()
	a := registry.Agent{ID: "claude", Role: "reviewer", Host: "vm-9", Registered: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := registry.Write(root, a); err != nil {
		t.Fatal(err)
	}
}

// inboxReports returns the delivery reports in agent's inbox, on m.
func inboxReports(t testing.TB, root tree.Root, agent string, m channel.Message) []channel.Message {
	t.Helper()
	b, err := inbox.New(root, agent, inbox.Options{Channels: []string{chName}})
	if err != nil {
		t.Fatal(err)
	}
	items, err := b.Peek()
	if err != nil {
		t.Fatal(err)
	}
	var out []channel.Message
	for _, it := range items {
		if it.Message.IsDeliveryReport() && it.Message.Metadata.InReplyTo == m.ID {
			out = append(out, it.Message)
		}
	}
	return out
}

// oneReport waits for m's report in alice's inbox, checks that there is
// exactly one, still after a few sweeps, and returns what it reports.
func oneReport(t *testing.T, root tree.Root, m channel.Message, every time.Duration) (channel.Message, delivery.Report) {
	t.Helper()
	waitFor(t, "a delivery report to alice", func() bool { return len(inboxReports(t, root, "alice", m)) > 0 })
	holds(t, 10*every, "one report", func() bool { return len(inboxReports(t, root, "alice", m)) == 1 })
	got := inboxReports(t, root, "alice", m)[0]
	r, ok := delivery.ParseReport(&got)
	if !ok {
		t.Fatalf("report %+v: no extension", got)
	}
	if got.To != "alice" || got.Type != channel.TypeDeliveryReport || r.Message != m.ID || r.Channel != chName {
		t.Errorf("report %+v: %+v", got, r)
	}
	return got, r
}

// TestBounceGuard: a message the max-hops guard refuses gets its sender
// exactly one report, from the watcher that refused it, also after a
// restart.
func TestBounceGuard(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := bounceConfig(root, r)
	cfg.MaxHops = 2
	h := start(t, cfg)
	m := post(t, root, channel.Message{To: agent, Content: channel.Content{Text: "deep"}, Metadata: channel.Metadata{Hops: 2}})
	got, rep := oneReport(t, root, m, cfg.BounceEvery)
	if got.From != agent || rep.State != delivery.Refused || rep.Guard != delivery.GuardMaxHops || rep.Agent != agent ||
		!strings.Contains(got.Content.Text, "refused by max-hops") {
		t.Errorf("report %q: %+v", got.Content.Text, rep)
	}
	h.stop()
	start(t, cfg)
	holds(t, 10*cfg.BounceEvery, "one report after a restart", func() bool { return len(inboxReports(t, root, "alice", m)) == 1 })
	if n := len(r.Calls()); n != 0 {
		t.Errorf("the CLI ran %d times", n)
	}
	st := delivery.For(root, chName, &m, delivery.Options{})
	if st.Addressees[0].Report != got.ID {
		t.Errorf("status %+v, want report %s", st.Addressees[0], got.ID)
	}
}

// TestBounceFailed: a failed run reports failed.
func TestBounceFailed(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{reply: func(runCall) (modelcli.Response, error) { return modelcli.Response{}, errors.New("the model is down") }}
	cfg := bounceConfig(root, r)
	start(t, cfg)
	m := send(t, root, agent, "please")
	_, rep := oneReport(t, root, m, cfg.BounceEvery)
	if rep.State != delivery.Failed || !strings.Contains(rep.Reason, "the model is down") {
		t.Errorf("report %+v", rep)
	}
}

// TestBounceUndeliverable: a message to an agent with no registry entry
// and no presence gets one report, though two watchers sweep the channel
// (two deciders racing).
func TestBounceUndeliverable(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	cfg := bounceConfig(root, &fakeRunner{})
	start(t, cfg)
	other := cfg
	other.Agent = "gemini"
	start(t, other)
	m := send(t, root, "nobody", "hello?")
	_, rep := oneReport(t, root, m, cfg.BounceEvery)
	if rep.State != delivery.Undeliverable || rep.Agent != "nobody" {
		t.Errorf("report %+v", rep)
	}
	// A message to a known agent is not reported.
	ok := send(t, root, agent, "hi")
	waitReplies(t, root, ok.ID)
	holds(t, 10*cfg.BounceEvery, "no report on an answered message", func() bool { return len(inboxReports(t, root, "alice", ok)) == 0 })
	// Nor on the reply, though alice, a person, has no registry entry.
	reply := repliesTo(messages(t, root), ok.ID)[0]
	for _, m := range messages(t, root) {
		if m.IsDeliveryReport() && m.Metadata.InReplyTo == reply.ID {
			t.Errorf("a report on the watcher's reply: %q", m.Content.Text)
		}
	}
}

// TestBounceExpired: a message nobody claimed within its expiry gets one
// report; its agent, back later, still answers it, and the status shows
// both.
func TestBounceExpired(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	registerClaude(t, root)
	cfg := bounceConfig(root, &fakeRunner{})
	start(t, cfg)
	m := channel.Message{To: "claude", Content: channel.Content{Text: "soon please"}}
	delivery.SetExpireAfter(&m, time.Second)
	m = post(t, root, m)
	quick := send(t, root, "claude", "no hurry") // no expiry: never reported
	got, rep := oneReport(t, root, m, cfg.BounceEvery)
	if rep.State != delivery.Expired || got.From != agent {
		t.Errorf("report %+v from %s", rep, got.From)
	}
	if st := delivery.For(root, chName, &m, delivery.Options{}); st.Addressees[0].State != delivery.Expired {
		t.Errorf("status %+v", st.Addressees[0])
	}
	if n := len(inboxReports(t, root, "alice", quick)); n != 0 {
		t.Errorf("%d reports on a message without expiry", n)
	}
	late := config(root, &fakeRunner{})
	late.Agent = "claude"
	late.Replay = &watcher.Replay{From: m.Time().Add(-time.Second)} // a first start would begin now
	start(t, late)
	waitReplies(t, root, m.ID)
	waitFor(t, "answered", func() bool {
		a := delivery.For(root, chName, &m, delivery.Options{}).Addressees[0]
		return a.State == delivery.Answered && a.Report == got.ID
	})
}

// TestBounceChannelExpiry: the channel's settings give its messages an
// expiry.
func TestBounceChannelExpiry(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	registerClaude(t, root)
	if err := delivery.WriteChannelSettings(root, chName, delivery.ChannelSettings{ExpireAfter: "1s"}); err != nil {
		t.Fatal(err)
	}
	cfg := bounceConfig(root, &fakeRunner{})
	start(t, cfg)
	m := send(t, root, "claude", "anyone?")
	if _, rep := oneReport(t, root, m, cfg.BounceEvery); rep.State != delivery.Expired {
		t.Errorf("report %+v", rep)
	}
}

// TestBounceAfterCrash: a decider killed between the mark and the post
// (the mark is there, no report): the sweep posts the report under the
// mark's id, once.
func TestBounceAfterCrash(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	m := send(t, root, "nobody", "hello?")
	rp := &delivery.Reporter{Root: root, Agent: "gemini", Post: func(*channel.Message) error { return errors.New("killed") }}
	if _, err := rp.Send(&m, delivery.Report{Agent: "nobody", State: delivery.Undeliverable, Reason: "gone"}); err == nil {
		t.Fatal("the crash did not fail")
	}
	k, err := delivery.ReadReport(root, chName, "nobody", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bounceConfig(root, &fakeRunner{})
	start(t, cfg)
	got, rep := oneReport(t, root, m, cfg.BounceEvery)
	if got.ID != k.ID || rep.Reason != "gone" || rep.DecidedBy != "gemini" {
		t.Errorf("report %s %+v, want the mark's %s", got.ID, rep, k.ID)
	}
}

// TestReportNotAnswered: a delivery report addressed to the agent is not
// answered.
func TestReportNotAnswered(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	h := start(t, bounceConfig(root, r))
	rep := post(t, root, channel.Message{From: "gemini", To: agent, Type: channel.TypeDeliveryReport, Content: channel.Content{Text: "[collab] your message x expired."}})
	after := send(t, root, agent, "and this?")
	waitReplies(t, root, after.ID)
	if len(h.logs.find("skip", "msg_id", rep.ID)) == 0 {
		t.Error("the report was not skipped")
	}
	if n := len(r.callsFor(rep.ID)); n != 0 {
		t.Errorf("the CLI ran %d times on a report", n)
	}
}

// TestBounceKilled: a job killed by request is failed, and its sender
// gets a report saying so.
func TestBounceKilled(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	slow := make(chan runCall, 1)
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		slow <- c
		<-c.Ctx.Done()
		return modelcli.Response{}, c.Ctx.Err()
	}}
	cfg := bounceConfig(root, r)
	start(t, cfg)
	m := send(t, root, agent, "refactor everything")
	select {
	case <-slow:
	case <-time.After(waitLong):
		t.Fatal("the CLI was not run")
	}
	waitJob(t, root, m.ID, "running", func(j jobs.Job) bool { return j.Status == jobs.Running })
	if err := jobs.RequestKill(root, agent, jobFor(root, agent, m.ID), "alice", nil); err != nil {
		t.Fatal(err)
	}
	_, rep := oneReport(t, root, m, cfg.BounceEvery)
	if rep.State != delivery.Failed || rep.Reason != "job killed by request" {
		t.Errorf("report %+v", rep)
	}
}

// TestBounceExpiredBetweenSweeps: a message with an expiry of its own
// that comes while the sweep waits for its next round (an hour here) is
// reported when it expires: the scan wakes the sweep.
func TestBounceExpiredBetweenSweeps(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	registerClaude(t, root)
	cfg := bounceConfig(root, &fakeRunner{})
	cfg.BounceEvery = time.Hour
	// A first report, on a message there before the watcher, proves the
	// sweep ran: nothing is open then, and its next round is an hour away.
	first := send(t, root, "nobody", "anyone?")
	start(t, cfg)
	oneReport(t, root, first, 20*time.Millisecond)
	m := channel.Message{To: "claude", Content: channel.Content{Text: "soon please"}}
	delivery.SetExpireAfter(&m, time.Second)
	m = post(t, root, m)
	if _, rep := oneReport(t, root, m, 20*time.Millisecond); rep.State != delivery.Expired {
		t.Errorf("report %+v", rep)
	}
}
