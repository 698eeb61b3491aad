package watcher_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/prompt"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// TestConfigRefused: a bad configuration is an error before any file is
// touched (docs/protocol.md#the-shared-tree names).
func TestConfigRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		edit func(*watcher.Config)
	}{
		{"agent with slash", func(c *watcher.Config) { c.Agent = "../etc" }},
		{"empty agent", func(c *watcher.Config) { c.Agent = "" }},
		{"agent starting with dash", func(c *watcher.Config) { c.Agent = "-x" }},
		{"no channel", func(c *watcher.Config) { c.Channels = nil }},
		{"channel with space", func(c *watcher.Config) { c.Channels = []string{"gen eral"} }},
		{"second channel bad", func(c *watcher.Config) { c.Channels = []string{chName, ".."} }},
		{"no runner", func(c *watcher.Config) { c.Runner = nil }},
		// Replaying "after" a message that cannot be one would replay the
		// whole channel.
		{"replay after a non-id", func(c *watcher.Config) { c.Replay = &watcher.Replay{After: "yesterday"} }},
		// A nanosecond poll burns a core; a nanosecond heartbeat rewrites
		// presence nonstop.
		{"poll below the minimum", func(c *watcher.Config) { c.Poll = time.Nanosecond }},
		{"heartbeat below the minimum", func(c *watcher.Config) { c.Heartbeat = time.Nanosecond }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			cfg := config(root, &fakeRunner{})
			tt.edit(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := watcher.Run(ctx, cfg); err == nil {
				t.Fatal("Run = nil, want an error")
			}
			if ents, _ := os.ReadDir(string(root)); len(ents) != 0 {
				t.Errorf("Run refused the config but wrote %v into the root", ents)
			}
		})
	}
}

// TestReply: a message to the agent gets exactly one reply, addressed and
// linked as docs/protocol.md#messages says, and the CLI gets docs/protocol.md#the-model-run's environment.
func TestReply(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	h := start(t, cfg)

	thread := channel.NewID("claude", time.Now().Add(-time.Minute), "0001")
	cases := []struct {
		name string
		msg  channel.Message
		hops int
		thr  string // "" : the message's own id
	}{
		{name: "fresh", msg: channel.Message{To: agent, Content: channel.Content{Text: "please review the plan"}}},
		{name: "in a chain", msg: channel.Message{
			From: "claude", To: agent, Content: channel.Content{Text: "and the tests?"},
			Metadata: channel.Metadata{Hops: 2, InReplyTo: thread, Thread: thread},
		}, hops: 2, thr: thread},
		{name: "reply without thread", msg: channel.Message{
			From: "claude", To: agent, Content: channel.Content{Text: "one more"},
			Metadata: channel.Metadata{Hops: 1, InReplyTo: thread},
		}, hops: 1, thr: thread},
	}
	for i := range cases {
		cases[i].msg = post(t, root, cases[i].msg)
	}
	var all []string
	for _, c := range cases {
		all = append(all, c.msg.ID)
	}
	msgs := waitReplies(t, root, all...)
	waitSettled(t, root, agent)
	msgs = messages(t, root)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.msg
			rs := repliesTo(msgs, m.ID)
			if len(rs) != 1 {
				t.Fatalf("%d replies to %s, want 1: %+v", len(rs), m.ID, rs)
			}
			got := rs[0]
			wantThread := c.thr
			if wantThread == "" {
				wantThread = m.ID
			}
			for _, f := range []struct{ name, got, want string }{
				{"from", got.From, agent},
				{"to", got.To, m.From},
				{"session_id", got.SessionID, chName},
				{"type", got.Type, "chat"},
				{"text", got.Content.Text, "reply to " + m.ID},
				{"metadata.in_reply_to", got.Metadata.InReplyTo, m.ID},
				{"metadata.thread", got.Metadata.Thread, wantThread},
				{"metadata.mode", got.Metadata.Mode, "watcher"},
				{"metadata.turn", got.Metadata.Turn, agent},
				{"metadata.host", got.Metadata.Host, testHost},
				{"file", got.File, got.ID + ".json"},
			} {
				if f.got != f.want {
					t.Errorf("reply %s = %q, want %q", f.name, f.got, f.want)
				}
			}
			if got.Metadata.Hops != c.hops+1 {
				t.Errorf("reply hops = %d, want %d", got.Metadata.Hops, c.hops+1)
			}
			if _, err := channel.ParseID(got.ID); err != nil || !strings.Contains(got.ID, "-"+agent+"-") {
				t.Errorf("reply id %q is not a message id of %s", got.ID, agent)
			}

			calls := r.callsFor(m.ID)
			if len(calls) != 1 {
				t.Fatalf("CLI ran %d times for %s, want 1", len(calls), m.ID)
			}
			call := calls[0]
			for k, want := range map[string]string{
				"COLLAB_ROOT":       string(root),
				"COLLAB_AGENT":      agent,
				"COLLAB_CHANNEL":    chName,
				"COLLAB_MESSAGE_ID": m.ID,
				"COLLAB_FROM":       m.From,
				"COLLAB_HOPS":       strconv.Itoa(c.hops),
			} {
				if got := call.env(k); got != want {
					t.Errorf("CLI env %s = %q, want %q", k, got, want)
				}
			}
			if !strings.Contains(call.Req.Prompt, m.Content.Text) {
				t.Errorf("prompt lacks the message text %q:\n%s", m.Content.Text, call.Req.Prompt)
			}
			if !strings.Contains(call.Req.Prompt, m.ID) {
				t.Errorf("prompt lacks the message id %s", m.ID)
			}

			c, err := readClaim(root, agent, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			if c.Status != claim.Replied || c.Reply != got.ID {
				t.Errorf("claim = %s reply %q, want %s reply %q", c.Status, c.Reply, claim.Replied, got.ID)
			}
		})
	}
	if n := len(h.logs.find("replied")); n != len(cases) {
		t.Errorf("%d \"replied\" log lines, want %d", n, len(cases))
	}
	s := readPresence(t, root, agent)
	if s.LastReply == "" || s.Counters["handled"] != int64(len(cases)) {
		t.Errorf("presence last_reply %q counters %v, want a reply and handled=%d", s.LastReply, s.Counters, len(cases))
	}
}

// TestPromptTranscript: the prompt holds the message and the Context
// messages before it, and nothing older.
func TestPromptTranscript(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.Context = 2
	start(t, cfg)

	// Earlier messages in earlier seconds, so that their order is plain.
	base := time.Now().Add(-10 * time.Second).Truncate(time.Second)
	var texts []string
	for i := range 3 {
		text := "earlier message number " + strconv.Itoa(i)
		texts = append(texts, text)
		post(t, root, channel.Message{
			ID:   channel.NewID("bob", base.Add(time.Duration(i)*time.Second), "000"+strconv.Itoa(i)),
			From: "bob", To: "all", Content: channel.Content{Text: text},
		})
	}
	m := send(t, root, agent, "what do you make of the above?")
	waitReplies(t, root, m.ID)

	calls := r.callsFor(m.ID)
	if len(calls) != 1 {
		t.Fatalf("CLI ran %d times, want 1", len(calls))
	}
	p := calls[0].Req.Prompt
	for i, text := range texts {
		if got, want := strings.Contains(p, text), i >= 1; got != want {
			t.Errorf("prompt has %q: %v, want %v (Context 2)", text, got, want)
		}
	}
	if !strings.Contains(p, m.Content.Text) {
		t.Errorf("prompt lacks the message text")
	}
	if i, j := strings.Index(p, texts[2]), strings.Index(p, m.Content.Text); i < 0 || j < i {
		t.Errorf("the transcript does not come before the message in the prompt")
	}
}

// TestPromptTranscriptSameSecond: within one second, channel order is the
// JSON timestamp (docs/protocol.md#messages), so the transcript of B holds A (posted before
// B in the same second) and not C (posted after it), whatever their
// random hex says.
func TestPromptTranscriptSameSecond(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	sec := time.Now().Add(-30 * time.Second).Truncate(time.Second)
	cfg.Replay = &watcher.Replay{From: sec}
	at := func(ms int) string { return sec.Add(time.Duration(ms) * time.Millisecond).Format(channel.TimeFormat) }
	a := post(t, root, channel.Message{ID: channel.NewID("bob", sec, "ffff"), Timestamp: at(100),
		From: "bob", To: "all", Content: channel.Content{Text: "A: said first"}})
	b := post(t, root, channel.Message{ID: channel.NewID("bob", sec, "8888"), Timestamp: at(500),
		From: "bob", To: agent, Content: channel.Content{Text: "B: the question"}})
	c := post(t, root, channel.Message{ID: channel.NewID("bob", sec, "0000"), Timestamp: at(900),
		From: "bob", To: "all", Content: channel.Content{Text: "C: said after the question"}})
	start(t, cfg)
	waitReplies(t, root, b.ID)

	p := r.callsFor(b.ID)[0].Req.Prompt
	if !strings.Contains(p, a.Content.Text) {
		t.Errorf("B's transcript lacks A, posted before B in the same second (A's hex sorts after B's)")
	}
	if strings.Contains(p, c.Content.Text) {
		t.Errorf("B's transcript holds C, posted after B in the same second (C's hex sorts before B's)")
	}
}

// TestAddressing: docs/protocol.md#addressing in the loop.
func TestAddressing(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	start(t, config(root, r))

	type tc struct {
		name string
		msg  channel.Message
		want bool
	}
	cases := []tc{
		{"to the agent", channel.Message{To: agent, Content: channel.Content{Text: "hi"}}, true},
		{"mention", channel.Message{To: "all", Content: channel.Content{Text: "what does @codex think?"}}, true},
		{"mention with punctuation", channel.Message{To: "bob", Content: channel.Content{Text: "cc @codex, please"}}, true},
		{"first line, any case", channel.Message{To: "all", Content: channel.Content{Text: "CODEX please look at this\nthanks"}}, true},
		{"first line after blanks", channel.Message{To: "all", Content: channel.Content{Text: "  Codex: ping"}}, true},
		{"longer name mentioned", channel.Message{To: "all", Content: channel.Content{Text: "@codex-2 please look"}}, false},
		{"longer name first", channel.Message{To: "all", Content: channel.Content{Text: "codex-2 please look"}}, false},
		{"word prefix", channel.Message{To: "all", Content: channel.Content{Text: "codexes are great"}}, false},
		{"name on second line", channel.Message{To: "all", Content: channel.Content{Text: "hello\ncodex please"}}, false},
		{"email address", channel.Message{To: "all", Content: channel.Content{Text: "write to ops@codex.example"}}, false},
		{"broadcast", channel.Message{To: "all", Content: channel.Content{Text: "hello everyone"}}, false},
		{"to someone else", channel.Message{To: "claude", Content: channel.Content{Text: "hello claude"}}, false},
		{"own message", channel.Message{From: agent, To: agent, Content: channel.Content{Text: "@codex note to self"}}, false},
		{"guard notice", channel.Message{From: "claude", To: agent, Type: "notice", Content: channel.Content{Text: "@codex stopped"}}, false},
		{"guard metadata", channel.Message{From: "claude", To: agent, Content: channel.Content{Text: "@codex stopped"},
			Metadata: channel.Metadata{Extra: map[string]json.RawMessage{"guard": json.RawMessage(`"max-hops"`)}}}, false},
	}
	for i := range cases {
		cases[i].msg = post(t, root, cases[i].msg)
	}
	var want []string
	for _, c := range cases {
		if c.want {
			want = append(want, c.msg.ID)
		}
	}
	waitReplies(t, root, want...)
	waitSettled(t, root, agent)
	msgs := messages(t, root)
	for _, c := range cases {
		n := len(repliesTo(msgs, c.msg.ID))
		runs := len(r.callsFor(c.msg.ID))
		if c.want && (n != 1 || runs != 1) || !c.want && (n != 0 || runs != 0) {
			t.Errorf("%s: %d replies, %d CLI runs; want answered: %v", c.name, n, runs, c.want)
		}
	}
}

// TestPresence: AWAKE/IDLE at start, AWAKE/WORKING with the message while
// the CLI runs, IDLE after, OFFLINE after shutdown (docs/protocol.md#presence).
func TestPresence(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	release := make(chan struct{})
	r := &fakeRunner{reply: blockUntil(release)}
	h := start(t, config(root, r))

	s := readPresence(t, root, agent)
	for _, f := range []struct{ name, got, want string }{
		{"agent_id", s.AgentID, agent},
		{"state", s.State, presence.StateAwake},
		{"substate", s.Substate, presence.SubIdle},
		{"channel", s.Channel, chName},
		{"host", s.Host, testHost},
	} {
		if f.got != f.want {
			t.Errorf("presence at start: %s = %q, want %q", f.name, f.got, f.want)
		}
	}
	if s.WatcherPID != os.Getpid() {
		t.Errorf("presence watcher_pid = %d, want %d", s.WatcherPID, os.Getpid())
	}

	m := send(t, root, agent, "take your time")
	waitFor(t, "presence AWAKE/WORKING", func() bool {
		s = readPresence(t, root, agent)
		return s.Substate == presence.SubWorking
	})
	if s.State != presence.StateAwake || s.MessageID != m.ID {
		t.Errorf("presence while working = %s/%s message %q, want AWAKE/WORKING message %s", s.State, s.Substate, s.MessageID, m.ID)
	}
	if c, err := readClaim(root, agent, m.ID); err != nil || c.Status != claim.Working {
		t.Errorf("claim while working = %+v, %v; want working", c, err)
	}
	// The heartbeat keeps the file fresh while the CLI runs.
	first := s.Timestamp
	waitFor(t, "a heartbeat while working", func() bool {
		s = readPresence(t, root, agent)
		return s.Timestamp != first
	})
	if s.Substate != presence.SubWorking || s.MessageID != m.ID {
		t.Errorf("heartbeat while working = %s/%s %q, want WORKING %s", s.State, s.Substate, s.MessageID, m.ID)
	}

	close(release)
	waitReplies(t, root, m.ID)
	waitFor(t, "presence back to AWAKE/IDLE", func() bool {
		s = readPresence(t, root, agent)
		return s.State == presence.StateAwake && s.Substate == presence.SubIdle
	})
	if s.MessageID != "" {
		t.Errorf("idle presence names message %q", s.MessageID)
	}

	if err := h.stop(); err != nil {
		t.Errorf("Run = %v, want nil after cancel", err)
	}
	s = readPresence(t, root, agent)
	if s.State != presence.StateOffline {
		t.Errorf("presence after shutdown = %s/%s, want OFFLINE", s.State, s.Substate)
	}
}

// TestFirstStartAndReplay: a first start begins at now; Replay answers
// history from a time, or after a message.
func TestFirstStartAndReplay(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		replay func(hist []channel.Message) *watcher.Replay
		want   []int // indexes of hist answered
	}{
		{"no replay", func([]channel.Message) *watcher.Replay { return nil }, nil},
		{"from before the history", func(h []channel.Message) *watcher.Replay {
			return &watcher.Replay{From: h[0].Time().Add(-time.Minute)}
		}, []int{0, 1, 2}},
		{"from the second message", func(h []channel.Message) *watcher.Replay {
			return &watcher.Replay{From: h[1].Time().Truncate(time.Second)}
		}, []int{1, 2}},
		{"after a message", func(h []channel.Message) *watcher.Replay { return &watcher.Replay{After: h[0].ID} }, []int{1, 2}},
		{"after a message, from its time", func(h []channel.Message) *watcher.Replay {
			return &watcher.Replay{From: h[1].Time().Truncate(time.Second), After: h[1].ID}
		}, []int{2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			// History in distinct seconds, plus noise not for the agent.
			base := time.Now().Add(-time.Hour).Truncate(time.Second)
			var hist []channel.Message
			for i := range 3 {
				at := base.Add(time.Duration(i) * time.Minute)
				hist = append(hist, post(t, root, channel.Message{
					ID: channel.NewID("alice", at, "00a"+strconv.Itoa(i)), Timestamp: at.Format(channel.TimeFormat),
					To: agent, Content: channel.Content{Text: "history " + strconv.Itoa(i)},
				}))
				post(t, root, channel.Message{
					ID:   channel.NewID("bob", base.Add(time.Duration(i)*time.Minute+time.Second), "00b"+strconv.Itoa(i)),
					From: "bob", To: "all", Content: channel.Content{Text: "noise"},
				})
			}
			r := &fakeRunner{}
			cfg := config(root, r)
			cfg.Replay = tt.replay(hist)
			start(t, cfg)
			live := send(t, root, agent, "a new message")
			waitReplies(t, root, live.ID)
			var wantIDs []string
			for _, i := range tt.want {
				wantIDs = append(wantIDs, hist[i].ID)
			}
			waitReplies(t, root, wantIDs...)
			waitSettled(t, root, agent)

			got := r.calledIDs()
			slices.Sort(got)
			want := append(wantIDs, live.ID)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("CLI ran for %v, want %v", got, want)
			}
		})
	}
}

// TestReplayAfterSameSecond: "after" follows channel order, which within
// one second is the JSON timestamp, not the random hex of the name.
func TestReplayAfterSameSecond(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	sec := time.Now().Add(-time.Minute).Truncate(time.Second)
	at := func(ms int) string { return sec.Add(time.Duration(ms) * time.Millisecond).Format(channel.TimeFormat) }
	first := post(t, root, channel.Message{ID: channel.NewID("alice", sec, "ffff"), Timestamp: at(100),
		To: agent, Content: channel.Content{Text: "first"}})
	second := post(t, root, channel.Message{ID: channel.NewID("alice", sec, "0001"), Timestamp: at(900),
		To: agent, Content: channel.Content{Text: "second, same second, smaller hex"}})
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.Replay = &watcher.Replay{From: sec, After: first.ID}
	start(t, cfg)
	live := send(t, root, agent, "live")
	waitReplies(t, root, live.ID)
	waitSettled(t, root, agent)
	if n := len(r.callsFor(first.ID)); n != 0 {
		t.Errorf("the After message itself was answered %d times", n)
	}
	if n := len(r.callsFor(second.ID)); n != 1 {
		t.Errorf("a message after the After message (same second, later timestamp, smaller hex) was answered %d times, want 1", n)
	}
}

// TestRestart: what arrives while the watcher is down is answered after a
// restart, once, and nothing is answered twice.
func TestRestart(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)

	h := start(t, cfg)
	before := send(t, root, agent, "before the restart")
	waitReplies(t, root, before.ID)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root.State(agent), "watch.json")); err != nil {
		t.Fatalf("no state file after a run: %v", err)
	}

	var down []channel.Message
	for i := range 3 {
		down = append(down, send(t, root, agent, "while down "+strconv.Itoa(i)))
	}
	send(t, root, "all", "not for anyone")

	h2 := start(t, cfg)
	live := send(t, root, agent, "after the restart")
	waitReplies(t, root, append(ids(down...), live.ID)...)
	waitSettled(t, root, agent)
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(h2.logs.find("watching"), func(r map[string]any) bool { return r["resumed"] == true }) {
		t.Errorf("the second run did not log that it resumed")
	}

	msgs := messages(t, root)
	for _, m := range append(append([]channel.Message{before}, down...), live) {
		if n, runs := len(repliesTo(msgs, m.ID)), len(r.callsFor(m.ID)); n != 1 || runs != 1 {
			t.Errorf("%q: %d replies, %d CLI runs, want 1 and 1", m.Content.Text, n, runs)
		}
	}
	if n := len(r.Calls()); n != 5 {
		t.Errorf("%d CLI runs in all, want 5", n)
	}
}

// TestRestartPending: a message queued behind a running CLI when the
// watcher stops is answered after the restart.
func TestRestartPending(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	release := make(chan struct{})
	r := &fakeRunner{reply: blockUntil(release)}
	cfg := config(root, r)
	cfg.Grace = waitLong
	h := start(t, cfg)
	first := send(t, root, agent, "first")
	waitFor(t, "the first CLI run", func() bool { return len(r.Calls()) == 1 })
	second := send(t, root, agent, "second, queued")
	waitFor(t, "the second message to be queued", func() bool { return readPresence(t, root, agent).Queue == 1 })
	h.cancel()
	waitFor(t, "the watcher to notice the cancel", func() bool { return len(h.logs.find("stopping; waiting for the running CLI")) == 1 })
	close(release) // the running CLI finishes within the grace period
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if len(r.callsFor(second.ID)) != 0 {
		t.Fatalf("the queued message ran during shutdown")
	}
	waitReplies(t, root, first.ID)

	h2 := start(t, cfg)
	waitReplies(t, root, second.ID)
	waitSettled(t, root, agent)
	h2.stop()
	msgs := messages(t, root)
	for _, m := range []channel.Message{first, second} {
		if n := len(repliesTo(msgs, m.ID)); n != 1 {
			t.Errorf("%q: %d replies, want 1", m.Content.Text, n)
		}
	}
}

// TestCorruptState: an unreadable state file is logged, kept aside, and
// the watcher recovers: it rescans the recovery window and answers what
// has no reply (scenario 11; see state_test.go for more).
func TestCorruptState(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, content string }{
		{"not JSON", "{\"version\": 1, \"channels\": {\x00garbage"},
		{"empty", ""},
		{"wrong types", `{"version": 1, "channels": {"general": {"floor": 42, "seen": "x"}}, "pending": 7}`},
		{"unknown version", `{"version": 99}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			if err := os.MkdirAll(root.State(agent), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root.State(agent), "watch.json"), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			old := send(t, root, agent, "before the start")
			r := &fakeRunner{}
			h := start(t, config(root, r))
			m := send(t, root, agent, "hello")
			waitReplies(t, root, m.ID, old.ID)
			waitSettled(t, root, agent)
			if len(h.logs.find("state unreadable; recovering: rescanning the channels")) != 1 {
				t.Errorf("no log line about the unreadable state")
			}
			aside, _ := filepath.Glob(filepath.Join(root.State(agent), "watch.json.corrupt-*"))
			if len(aside) != 1 {
				t.Errorf("corrupt copies kept: %q, want 1", aside)
			} else if got, _ := os.ReadFile(aside[0]); string(got) != tt.content {
				t.Errorf("the corrupt copy holds %q, want %q", got, tt.content)
			}
			// The state is rewritten and good for the next start.
			h.stop()
			h2 := start(t, config(root, r))
			if len(h2.logs.find("state unreadable; recovering: rescanning the channels")) != 0 {
				t.Errorf("the state is still unreadable after a run")
			}
			h2.stop()
			msgs := messages(t, root)
			for _, m := range []channel.Message{old, m} {
				if n, runs := len(repliesTo(msgs, m.ID)), len(r.callsFor(m.ID)); n != 1 || runs != 1 {
					t.Errorf("%q: %d replies, %d CLI runs, want 1 and 1", m.Content.Text, n, runs)
				}
			}
		})
	}
}

// TestMultipleChannels: one watcher answers in each of its channels, in
// the channel the message came from.
func TestMultipleChannels(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.Channels = []string{chName, "ops"}
	start(t, cfg)
	a := send(t, root, agent, "in general")
	b := post(t, root, channel.Message{SessionID: "ops", To: agent, Content: channel.Content{Text: "in ops"}})
	waitReplies(t, root, a.ID)
	waitFor(t, "the reply in ops", func() bool {
		msgs, _, err := channel.ReadAll(root, "ops", channel.ReaderOptions{})
		return err == nil && len(repliesTo(msgs, b.ID)) == 1
	})
	calls := r.callsFor(b.ID)
	if len(calls) != 1 || calls[0].env("COLLAB_CHANNEL") != "ops" {
		t.Errorf("CLI calls for the ops message: %d, COLLAB_CHANNEL %q", len(calls), calls[0].env("COLLAB_CHANNEL"))
	}
	s := readPresence(t, root, agent)
	if !slices.Equal(s.Channels, cfg.Channels) {
		t.Errorf("presence channels = %v, want %v", s.Channels, cfg.Channels)
	}
}

var _ watcher.Runner = (*modelcli.Command)(nil)

// writeRaw publishes a message file as a foreign writer would: any JSON,
// under a name of its choosing, through a dot-file and a rename.
func writeRaw(t *testing.T, root tree.Root, name, content string) {
	t.Helper()
	dir := root.Channel(chName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// TestForeignWriter: messages from other writers (docs/protocol.md#messages: be liberal) are
// answered in the channel they were found in, under the id their file name
// gives them.
func TestForeignWriter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		content func(earlier string) string
	}{
		{"only the required fields", func(string) string { return `{"from":"bob","content":{"text":"@codex hi"}}` }},
		{"session_id naming another channel", func(string) string {
			return `{"from":"bob","to":"codex","session_id":"elsewhere","content":{"text":"hi"}}`
		}},
		{"session_id that is not a name", func(string) string {
			return `{"from":"bob","to":"codex","session_id":"Agent OS Paper","content":{"text":"hi"}}`
		}},
		{"id of an earlier message (a copied file)", func(earlier string) string {
			return `{"id":"` + earlier + `","from":"bob","to":"codex","content":{"text":"hi again"}}`
		}},
		{"sender name with spaces", func(string) string {
			return `{"from":"Bob Smith","to":"codex","content":{"text":"hi"},"metadata":{"hops":"0"}}`
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			r := &fakeRunner{}
			h := start(t, config(root, r))
			earlier := send(t, root, agent, "an earlier question")
			waitReplies(t, root, earlier.ID)

			id := channel.NewID("bob", time.Now(), "f00d")
			writeRaw(t, root, id+".json", tt.content(earlier.ID))
			waitFor(t, "the watcher to take the message", func() bool { return len(h.logs.find("queued")) == 2 })
			sentinel := send(t, root, agent, "sentinel")
			waitReplies(t, root, sentinel.ID)
			waitSettled(t, root, agent)

			msgs := messages(t, root)
			rs := repliesTo(msgs, id)
			if len(rs) != 1 {
				t.Fatalf("%d replies in %s with in_reply_to %s, want 1 (CLI runs: %v)", len(rs), chName, id, r.calledIDs())
			}
			if n := len(r.callsFor(id)); n != 1 {
				t.Errorf("CLI ran %d times with COLLAB_MESSAGE_ID=%s, want 1", n, id)
			}
			if rs[0].Metadata.Thread != id {
				t.Errorf("reply thread = %s, want %s", rs[0].Metadata.Thread, id)
			}
			if n := len(repliesTo(msgs, earlier.ID)); n != 1 {
				t.Errorf("%d replies to the earlier message, want 1", n)
			}
			if ents, _ := os.ReadDir(root.Channels()); len(ents) != 1 {
				t.Errorf("channels after the reply: %v, want only %s", ents, chName)
			}
		})
	}
}

// TestSkippedFiles: files that are not messages are logged and skipped;
// the watcher carries on.
func TestSkippedFiles(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	h := start(t, config(root, &fakeRunner{}))
	bad := channel.NewID("bob", time.Now(), "0bad") + ".json"
	writeRaw(t, root, bad, "this is not JSON")
	writeRaw(t, root, "notes.txt", "hello")
	if err := os.WriteFile(filepath.Join(root.Channel(chName), ".in-flight.tmp"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	var m channel.Message
	for range 4 { // the reader retries a bad file a few scans before it reports it
		m = send(t, root, agent, "still there?")
		waitReplies(t, root, m.ID)
	}
	if n := len(h.logs.find("skipped file", "file", bad, "reason", string(channel.SkipMalformed))); n != 1 {
		t.Errorf("%d log lines for the malformed file, want 1", n)
	}
	if n := len(h.logs.find("skipped file", "file", "notes.txt")); n != 1 {
		t.Errorf("%d log lines for notes.txt, want 1", n)
	}
	if n := len(h.logs.find("skipped file", "file", ".in-flight.tmp")); n != 0 {
		t.Errorf("an in-flight dot-file was reported")
	}
}

// TestAwaitedReplySkipped: the reply to a message the agent sent with
// `collab send --wait` goes to the waiting command, not to a new run; the
// reply to an ordinary message of the agent is answered as usual.
func TestAwaitedReplySkipped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		f := &fakeRunner{}
		h := start(t, config(root, f))
		waited := channel.Message{From: agent, To: "bob", SessionID: chName}
		waited.Content.Text = "bob, what is 2+2?"
		waited.SetAwaitReply()
		waited = post(t, root, waited)
		plain := channel.Message{From: agent, To: "bob", SessionID: chName}
		plain.Content.Text = "bob, tell me when done"
		plain = post(t, root, plain)
		for _, parent := range []channel.Message{waited, plain} {
			r := channel.Message{From: "bob", To: agent, SessionID: chName}
			r.Content.Text = "answer to " + parent.ID
			r.Metadata.InReplyTo = parent.ID
			post(t, root, r)
		}
		waitFor(t, "the skip", func() bool {
			return len(h.logs.find("skip", "reason", "reply to a message the agent sent with --wait")) == 1
		})
		waitFor(t, "the ordinary reply to be run", func() bool { return len(f.Calls()) == 1 })
		holds(t, 300*time.Millisecond, "no second run", func() bool { return len(f.Calls()) == 1 })
	})
}

// TestPromptContextBudget: a large message in the context is cut with a
// marker, whatever the template, while the message answered is whole.
func TestPromptContextBudget(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.Context = 2
	tp, err := prompt.Parse("raw.tmpl", "{{range .Transcript}}{{.Content.Text}}{{end}}\n---\n{{.Message.Content.Text}}")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Template = tp
	start(t, cfg)

	big := channel.Message{
		ID:   channel.NewID("bob", time.Now().Add(-5*time.Second), "0000"),
		From: "bob", To: "all", Content: channel.Content{Text: strings.Repeat("x", 1_000_000)},
	}
	post(t, root, big)
	m := send(t, root, agent, "summarize the above "+strings.Repeat("y", 50_000))
	waitReplies(t, root, m.ID)
	calls := r.callsFor(m.ID)
	if len(calls) != 1 {
		t.Fatalf("CLI ran %d times, want 1", len(calls))
	}
	p := calls[0].Req.Prompt
	if !strings.Contains(p, "bytes, see message "+big.ID+"]") {
		t.Errorf("the large message in the context is not marked as cut")
	}
	if !strings.HasSuffix(p, "\n---\n"+m.Content.Text) {
		t.Errorf("the message answered is not whole")
	}
	if len(p) > prompt.ContextBytes+len(m.Content.Text)+1024 {
		t.Errorf("prompt is %d bytes", len(p))
	}
}

// TestNotAddressedIsDebug: a message for someone else is skipped at the
// debug level (most of a busy channel), the other skips stay at info.
func TestNotAddressedIsDebug(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	h := start(t, config(root, &fakeRunner{}))
	other := post(t, root, channel.Message{To: "bob", Content: channel.Content{Text: "not for you"}})
	own := post(t, root, channel.Message{From: agent, To: "bob", Content: channel.Content{Text: "mine"}})
	waitFor(t, "both skips", func() bool {
		return len(h.logs.find("skip", "msg_id", other.ID)) == 1 && len(h.logs.find("skip", "msg_id", own.ID)) == 1
	})
	if r := h.logs.find("skip", "msg_id", other.ID)[0]; r["level"] != "DEBUG" || r["reason"] != "not addressed" {
		t.Errorf("not addressed: %v; want a DEBUG record", r)
	}
	if r := h.logs.find("skip", "msg_id", own.ID)[0]; r["level"] != "INFO" {
		t.Errorf("own message: %v; want an INFO record", r)
	}
}

// TestAliases: a watcher with aliases (a workflow agent reviewer--pr-1 is
// @reviewer in its channel) answers to each alias as to its id, and posts
// as its id; a longer name and a message from the alias's name do not
// wake it.
func TestAliases(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.Agent, cfg.Aliases = "reviewer--pr-1", []string{"reviewer"}
	start(t, cfg)
	type tc struct {
		name string
		msg  channel.Message
		want bool
	}
	cases := []tc{
		{"to the id", channel.Message{To: "reviewer--pr-1", Content: channel.Content{Text: "hi"}}, true},
		{"to the alias", channel.Message{To: "reviewer", Content: channel.Content{Text: "hi"}}, true},
		{"mention of the alias", channel.Message{To: "all", Content: channel.Content{Text: "what does @reviewer think?"}}, true},
		{"first line, the alias", channel.Message{To: "all", Content: channel.Content{Text: "Reviewer, please look"}}, true},
		{"longer name", channel.Message{To: "all", Content: channel.Content{Text: "@reviewer-2 please look"}}, false},
		{"from the alias's name", channel.Message{From: "reviewer", To: "all", Content: channel.Content{Text: "@reviewer note"}}, false},
		{"someone else", channel.Message{To: "all", Content: channel.Content{Text: "@coder go"}}, false},
	}
	for i := range cases {
		cases[i].msg = post(t, root, cases[i].msg)
	}
	var want []string
	for _, c := range cases {
		if c.want {
			want = append(want, c.msg.ID)
		}
	}
	waitReplies(t, root, want...)
	waitSettled(t, root, cfg.Agent)
	msgs := messages(t, root)
	for _, c := range cases {
		got := repliesTo(msgs, c.msg.ID)
		if c.want && len(got) != 1 || !c.want && len(got) != 0 {
			t.Errorf("%s: %d replies; want answered: %v", c.name, len(got), c.want)
		}
		for _, m := range got {
			if m.From != cfg.Agent {
				t.Errorf("%s: reply from %q, want %q", c.name, m.From, cfg.Agent)
			}
		}
	}
}
