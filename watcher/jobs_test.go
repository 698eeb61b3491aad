package watcher_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// offsetClock runs with time.Now (real, or a synctest bubble's), plus the
// jumps a test makes.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *offsetClock) Add(d time.Duration) { c.offset.Add(int64(d)) }

// noonClock returns a clock at 12:00 UTC of today, so that a test is never
// near a day boundary unless it jumps there.
func noonClock() *offsetClock {
	now := time.Now()
	noon := now.UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)
	c := &offsetClock{}
	c.Add(noon.Sub(now))
	return c
}

// waitJob waits until the job answering message id satisfies cond, and
// returns its record.
func waitJob(t testing.TB, root tree.Root, id, what string, cond func(jobs.Job) bool) jobs.Job {
	t.Helper()
	var j jobs.Job
	waitFor(t, "job of "+id+": "+what, func() bool {
		var err error
		j, err = jobs.Read(root, agent, jobFor(root, agent, id))
		return err == nil && cond(j)
	})
	return j
}

func eventKinds(es []modelcli.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Kind)
	}
	return out
}

// waitPresence waits until agent's presence is AWAKE with substate sub.
func waitPresence(t testing.TB, root tree.Root, sub string) presence.Status {
	t.Helper()
	var s presence.Status
	waitFor(t, "presence AWAKE/"+sub, func() bool {
		s = readPresence(t, root, agent)
		return s.State == presence.StateAwake && s.Substate == sub
	})
	return s
}

// sessionOf returns the session the one run for message id resumed.
func sessionOf(t testing.TB, r *fakeRunner, id string) string {
	t.Helper()
	calls := r.callsFor(id)
	if len(calls) != 1 {
		t.Fatalf("%d runs for %s, want 1", len(calls), id)
	}
	return calls[0].Req.Session
}

// TestJobRecorded: every run leaves a job record with the reply, the cost
// and tokens, and the events the CLI adapter sent while it ran.
func TestJobRecorded(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	usage := modelcli.Usage{Input: 1200, Output: 80, CacheRead: 1000}
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		c.Req.OnEvent(modelcli.Event{Kind: modelcli.EventStarted, Text: "session S1"})
		c.Req.OnEvent(modelcli.Event{Kind: modelcli.EventToolCall, Tool: "Read", Text: "main.go"})
		c.Req.OnEvent(modelcli.Event{Kind: modelcli.EventProgress, Text: "looks fine"})
		c.Req.OnEvent(modelcli.Event{Kind: modelcli.EventCompleted, Text: "all good"})
		return modelcli.Response{Text: "all good", Session: "S1", CostUSD: 0.0123, Usage: usage}, nil
	}}
	cfg := config(root, r)
	cfg.CLI = "fake"
	start(t, cfg)

	m := send(t, root, agent, "please review")
	reply := repliesTo(waitReplies(t, root, m.ID), m.ID)[0]
	j := waitJob(t, root, m.ID, "finished with its reply", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })

	if j.Message != m.ID || !strings.HasPrefix(j.ID, "job-") || j.Status != jobs.Completed || j.Reply != reply.ID {
		t.Errorf("job %s status %q reply %q, want the job of %s completed %s", j.ID, j.Status, j.Reply, m.ID, reply.ID)
	}
	if j.Agent != agent || j.Host != testHost || j.Channel != chName || j.Message != m.ID || j.From != "alice" || j.CLI != "fake" {
		t.Errorf("job says agent %q host %q channel %q message %q from %q cli %q", j.Agent, j.Host, j.Channel, j.Message, j.From, j.CLI)
	}
	if j.CostUSD != 0.0123 || j.Usage != usage {
		t.Errorf("cost %v usage %+v, want 0.0123 %+v", j.CostUSD, j.Usage, usage)
	}
	if j.Session != "S1" || j.Resumed {
		t.Errorf("session %q resumed %v, want S1 started fresh", j.Session, j.Resumed)
	}
	want := []string{modelcli.EventStarted, modelcli.EventToolCall, modelcli.EventProgress, modelcli.EventCompleted}
	if got := eventKinds(j.Events); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	} else if j.Events[1].Tool != "Read" || j.Events[3].Text != "all good" || j.Events[0].Time.IsZero() {
		t.Errorf("events lost their fields: %+v", j.Events)
	}
	if j.Started.IsZero() || j.Ended.Before(j.Started) {
		t.Errorf("started %v ended %v", j.Started, j.Ended)
	}
	if c := waitClaim(t, root, agent, m.ID); c.Status != claim.Replied || c.Reply != reply.ID {
		t.Errorf("claim %s reply %q, want replied %s", c.Status, c.Reply, reply.ID)
	}
}

// TestSessionScopes: which later messages resume the CLI session of an
// earlier run, per scope.
func TestSessionScopes(t *testing.T) {
	t.Parallel()
	const other = "other"
	// Each run n returns session "Sn". A step posts a message to its
	// channel, in a new thread or in the thread of an earlier step.
	steps := []struct {
		name   string
		ch     string
		thread int // -1: a new thread; else the step that began it
	}{
		{"first", chName, -1},
		{"new thread, same channel", chName, -1},
		{"first thread again", chName, 0},
		{"other channel", other, -1},
		{"other channel again", other, 3},
	}
	tests := []struct {
		scope string
		want  []string // the session each step resumes
	}{
		{watcher.ScopeChannel, []string{"", "S0", "S1", "", "S3"}},
		{watcher.ScopeThread, []string{"", "", "S0", "", "S3"}},
		{watcher.ScopeNone, []string{"", "", "", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.scope, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			var n atomic.Int32
			r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
				return modelcli.Response{Text: "ok", Session: fmt.Sprintf("S%d", n.Add(1)-1)}, nil
			}}
			cfg := config(root, r)
			cfg.Channels = []string{chName, other}
			cfg.SessionScope = tt.scope
			start(t, cfg)

			var sent []channel.Message
			for i, s := range steps {
				m := channel.Message{SessionID: s.ch, To: agent, Content: channel.Content{Text: s.name}}
				if s.thread >= 0 {
					m.Metadata.Thread = sent[s.thread].ID
					m.Metadata.InReplyTo = sent[s.thread].ID
				}
				m = post(t, root, m)
				sent = append(sent, m)
				waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() })
				got := sessionOf(t, r, m.ID)
				if got != tt.want[i] {
					t.Errorf("step %d (%s): resumed session %q, want %q", i, s.name, got, tt.want[i])
				}
				if j, _ := jobs.Read(root, agent, jobFor(root, agent, m.ID)); j.Resumed != (tt.want[i] != "") {
					t.Errorf("step %d (%s): job resumed = %v", i, s.name, j.Resumed)
				}
			}
		})
	}
}

// TestSessionTTL: a session older than SessionTTL is not resumed.
func TestSessionTTL(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	clk := &offsetClock{}
	var n atomic.Int32
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		return modelcli.Response{Text: "ok", Session: fmt.Sprintf("S%d", n.Add(1)-1)}, nil
	}}
	cfg := config(root, r)
	cfg.Now = clk.Now
	cfg.SessionTTL = time.Hour
	start(t, cfg)

	for i, s := range []struct {
		after time.Duration // clock jump before the message
		want  string
	}{
		{0, ""},
		{50 * time.Minute, "S0"}, // within the hour
		{50 * time.Minute, "S1"}, // the hour counts from the last use
		{61 * time.Minute, ""},   // expired
		{time.Minute, "S3"},      // the fresh session is kept
	} {
		clk.Add(s.after)
		m := send(t, root, agent, fmt.Sprintf("message %d", i))
		waitReplies(t, root, m.ID)
		if got := sessionOf(t, r, m.ID); got != s.want {
			t.Errorf("message %d, %v later: resumed %q, want %q", i, s.after, got, s.want)
		}
	}
}

// TestSessionGone: a resume the CLI refuses starts a new session in the
// same job; the log says so and the reply is posted once.
func TestSessionGone(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	var fresh atomic.Int32
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		switch c.Req.Session {
		case "":
			return modelcli.Response{Text: "fresh", Session: fmt.Sprintf("S%d", fresh.Add(1))}, nil
		case "S1":
			return modelcli.Response{Stderr: "No conversation found with session ID: S1"},
				fmt.Errorf("claude: %w", modelcli.ErrSessionGone)
		}
		return modelcli.Response{Text: "resumed " + c.Req.Session, Session: c.Req.Session}, nil
	}}
	h := start(t, config(root, r))

	m0 := send(t, root, agent, "start")
	waitReplies(t, root, m0.ID)
	m1 := send(t, root, agent, "continue")
	msgs := waitReplies(t, root, m1.ID)
	if got := repliesTo(msgs, m1.ID); len(got) != 1 || got[0].Content.Text != "fresh" {
		t.Errorf("replies to the message whose session was gone: %v, want one \"fresh\"", got)
	}
	var sessions []string
	for _, c := range r.callsFor(m1.ID) {
		sessions = append(sessions, c.Req.Session)
	}
	if !slices.Equal(sessions, []string{"S1", ""}) {
		t.Errorf("runs for %s resumed %q, want [S1, \"\"]: the resume, then a new session", m1.ID, sessions)
	}
	if len(h.logs.find("session cannot be resumed; starting a new one", "msg_id", m1.ID, "session", "S1")) != 1 {
		t.Errorf("no log line about the session that cannot be resumed")
	}
	j := waitJob(t, root, m1.ID, "finished with its reply", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
	if j.Status != jobs.Completed || j.Session != "S2" || j.Error != "" {
		t.Errorf("job status %q session %q error %q, want completed S2 no error", j.Status, j.Session, j.Error)
	}
	if !slices.ContainsFunc(j.Events, func(e modelcli.Event) bool { return strings.Contains(e.Text, "cannot be resumed") }) {
		t.Errorf("job events %+v do not say the session could not be resumed", j.Events)
	}
	// S2 was started afresh, not resumed: `collab jobs show` must not say
	// "session S2 (resumed: true)".
	if j.Resumed {
		t.Errorf("job says session %q was resumed; it was a new session after %q was refused", j.Session, "S1")
	}

	m2 := send(t, root, agent, "and then")
	waitReplies(t, root, m2.ID)
	if got := sessionOf(t, r, m2.ID); got != "S2" {
		t.Errorf("after the fresh start, resumed %q, want the new session S2", got)
	}
}

// TestSessionsSurviveRestart: sessions are kept in sessions.json; a
// restarted watcher resumes them, unless it runs another CLI.
func TestSessionsSurviveRestart(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	var n atomic.Int32
	reply := func(c runCall) (modelcli.Response, error) {
		return modelcli.Response{Text: "ok", Session: fmt.Sprintf("S%d", n.Add(1)-1)}, nil
	}
	for i, s := range []struct {
		cli  string
		want string
	}{
		{"claude", ""},
		{"claude", "S0"}, // after a restart
		{"codex", ""},    // another CLI's session cannot be resumed
	} {
		r := &fakeRunner{reply: reply}
		cfg := config(root, r)
		cfg.CLI = s.cli
		h := start(t, cfg)
		m := send(t, root, agent, fmt.Sprintf("message %d", i))
		waitReplies(t, root, m.ID)
		if got := sessionOf(t, r, m.ID); got != s.want {
			t.Errorf("run %d (%s): resumed %q, want %q", i, s.cli, got, s.want)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root.State(agent), "sessions.json")); err != nil {
			t.Fatalf("after run %d: %v", i, err)
		}
	}
}

// TestKillJob: `collab jobs kill` from any host stops the running CLI
// within a poll or two; the job ends killed with an error event, the claim
// failed, no reply, and the watcher goes on.
func TestKillJob(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		slow := make(chan runCall, 1)
		var n atomic.Int32
		r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
			if n.Add(1) > 1 { // only the first run is slow
				return modelcli.Response{Text: "quick"}, nil
			}
			c.Req.OnEvent(modelcli.Event{Kind: modelcli.EventProgress, Text: "working on it"})
			slow <- c
			<-c.Ctx.Done()
			return modelcli.Response{}, c.Ctx.Err()
		}}
		cfg := config(root, r)
		h := start(t, cfg)

		m := send(t, root, agent, "refactor everything")
		var c runCall
		select {
		case c = <-slow:
		case <-time.After(waitLong):
			t.Fatal("the CLI was not run")
		}
		waitJob(t, root, m.ID, "running", func(j jobs.Job) bool { return j.Status == jobs.Running })
		asked := time.Now()
		if err := jobs.RequestKill(root, agent, jobFor(root, agent, m.ID), "alice", nil); err != nil {
			t.Fatalf("RequestKill: %v", err)
		}
		select {
		case <-c.Ctx.Done():
			// Poll is 20 ms of the bubble's clock, which a loaded machine
			// does not stretch; the bound is the one kept from real time.
			if took := time.Since(asked); took > 5*time.Second {
				t.Errorf("the CLI was stopped %v after the request, want within a poll or two (%v)", took, cfg.Poll)
			}
		case <-time.After(waitLong):
			t.Fatal("the CLI's context was not cancelled after the kill request")
		}

		j := waitJob(t, root, m.ID, "killed", func(j jobs.Job) bool { return j.Done() })
		if j.Status != jobs.Killed || j.Reply != "" {
			t.Errorf("job status %q reply %q, want killed with no reply", j.Status, j.Reply)
		}
		if k := eventKinds(j.Events); len(k) == 0 || k[len(k)-1] != modelcli.EventError || !strings.Contains(j.Error, "killed") {
			t.Errorf("job events %v error %q, want an error event last saying it was killed", k, j.Error)
		}
		if cl := waitClaim(t, root, agent, m.ID); cl.Status != claim.Failed || cl.Reply != "" {
			t.Errorf("claim %s reply %q, want failed with no reply", cl.Status, cl.Reply)
		}
		if len(h.logs.find("kill requested; stopping the CLI", "msg_id", m.ID)) != 1 {
			t.Errorf("no log line about the kill request")
		}
		waitSettled(t, root, agent)
		if s := readPresence(t, root, agent); s.Counters["failed"] != 1 {
			t.Errorf("presence counters %v, want failed 1", s.Counters)
		}

		next := send(t, root, agent, "something quick")
		msgs := waitReplies(t, root, next.ID)
		if got := repliesTo(msgs, m.ID); len(got) != 0 {
			t.Errorf("the killed job was answered: %v", got)
		}
		if len(r.callsFor(m.ID)) != 1 {
			t.Errorf("the killed message was run %d times, want once", len(r.callsFor(m.ID)))
		}
	})
}

// TestBudget: once the day's runs cost BudgetUSD the watcher stops
// invoking the CLI, says so once and shows THROTTLED; the next UTC day it
// carries on.
func TestBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		clk := noonClock()
		r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
			return modelcli.Response{Text: "reply to " + c.msgID(), CostUSD: 0.6}, nil
		}}
		cfg := config(root, r)
		cfg.Now = clk.Now
		cfg.BudgetUSD = 1.0
		h := start(t, cfg)

		for i := range 2 {
			m := send(t, root, agent, fmt.Sprintf("paid %d", i))
			waitReplies(t, root, m.ID)
		}
		waitPresence(t, root, presence.SubThrottled) // 1.20 of 1.00 spent
		w1 := send(t, root, agent, "waits 1")
		w2 := send(t, root, agent, "waits 2")
		waitFor(t, "the budget notice", func() bool { return len(notices(messages(t, root))) > 0 })
		holds(t, 15*cfg.Poll, "no run and one notice while the budget is spent", func() bool {
			return len(r.Calls()) == 2 && len(notices(messages(t, root))) == 1
		})
		n := notices(messages(t, root))[0]
		if n.From != agent || n.To != channel.Broadcast || string(n.Metadata.Extra["guard"]) != `"budget"` || !strings.Contains(n.Content.Text, "budget") {
			t.Errorf("notice from %q to %q guard %s: %q; want from %s to all, guard \"budget\"", n.From, n.To, n.Metadata.Extra["guard"], n.Content.Text, agent)
		}
		if s := readPresence(t, root, agent); s.Substate != presence.SubThrottled || s.Queue != 2 {
			t.Errorf("presence %s/%s queue %d, want AWAKE/THROTTLED with 2 waiting", s.State, s.Substate, s.Queue)
		}
		if got := len(h.logs.find("daily budget spent; messages wait until the next UTC day")); got != 1 {
			t.Errorf("%d log lines about the budget, want 1", got)
		}

		clk.Add(24 * time.Hour)
		msgs := waitReplies(t, root, w1.ID, w2.ID)
		if got := len(notices(msgs)); got != 1 {
			t.Errorf("%d notices, want still 1", got)
		}
		if got := len(r.Calls()); got != 4 {
			t.Errorf("%d runs, want 4", got)
		}
	})
}

// TestNeedsInput: a CLI that stops to ask sends the question to the
// asker; the asker's answer resumes the same session.
func TestNeedsInput(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		q := &modelcli.Question{Text: "Which database should the tests use?", Options: []string{"postgres", "sqlite"}}
		r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
			if c.Req.Session == "" {
				c.Req.OnEvent(modelcli.Event{Kind: modelcli.EventNeedsInput, Text: q.Text})
				return modelcli.Response{Text: "Before I start:", Session: "S1", Question: q, CostUSD: 0.01}, nil
			}
			return modelcli.Response{Text: "done with sqlite", Session: c.Req.Session}, nil
		}}
		cfg := config(root, r)
		start(t, cfg)

		m := send(t, root, agent, "set up the tests")
		ask := repliesTo(waitReplies(t, root, m.ID), m.ID)[0]
		if ask.To != "alice" {
			t.Errorf("the question went to %q, want the asker alice", ask.To)
		}
		for _, want := range []string{"Before I start:", q.Text, "postgres", "sqlite"} {
			if !strings.Contains(ask.Content.Text, want) {
				t.Errorf("the question %q does not contain %q", ask.Content.Text, want)
			}
		}
		var meta struct {
			Job     string   `json:"job"`
			Options []string `json:"options"`
		}
		if err := json.Unmarshal(ask.Metadata.Extra["needs_input"], &meta); err != nil || meta.Job != jobFor(root, agent, m.ID) || !slices.Equal(meta.Options, q.Options) {
			t.Errorf("metadata.needs_input = %s (%v), want job %s and the options", ask.Metadata.Extra["needs_input"], err, jobFor(root, agent, m.ID))
		}
		j := waitJob(t, root, m.ID, "awaiting input with its reply", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
		if j.Status != jobs.AwaitingInput || j.Reply != ask.ID || j.Question == nil || j.Question.Text != q.Text {
			t.Errorf("job status %q reply %q question %+v, want awaiting_input %s with the question", j.Status, j.Reply, j.Question, ask.ID)
		}
		waitPresence(t, root, presence.SubWaiting)
		holds(t, 5*cfg.Heartbeat, "presence stays WAITING across heartbeats", func() bool {
			return readPresence(t, root, agent).Substate == presence.SubWaiting
		})

		answer := post(t, root, channel.Message{To: agent, Content: channel.Content{Text: "sqlite"},
			Metadata: channel.Metadata{InReplyTo: ask.ID, Thread: ask.Metadata.Thread, Hops: ask.Metadata.Hops}})
		waitReplies(t, root, answer.ID)
		if got := sessionOf(t, r, answer.ID); got != "S1" {
			t.Errorf("the answer resumed session %q, want the asking session S1", got)
		}
		aj := waitJob(t, root, answer.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
		if len(aj.Events) == 0 || aj.Events[0].Kind != modelcli.EventInputSent || aj.Events[0].Text != "sqlite" {
			t.Errorf("the answer's job begins with %+v, want input_sent \"sqlite\"", aj.Events)
		} else if string(aj.Events[0].Data) != `"`+jobFor(root, agent, m.ID)+`"` {
			t.Errorf("input_sent data %s, want the asking job %q", aj.Events[0].Data, jobFor(root, agent, m.ID))
		}
		if aj.Status != jobs.Completed || !aj.Resumed {
			t.Errorf("answer's job status %q resumed %v, want completed, resumed", aj.Status, aj.Resumed)
		}
		waitJob(t, root, m.ID, "completed once answered", func(j jobs.Job) bool { return j.Status == jobs.Completed })
		waitSettled(t, root, agent)
	})
}

// TestJobRecordUnwritable: a job whose record cannot be written still
// runs and is answered.
func TestJobRecordUnwritable(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	start(t, config(root, r))
	// A file where the jobs folder would be.
	if err := os.WriteFile(root.Jobs(agent), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	m := send(t, root, agent, "hello")
	waitReplies(t, root, m.ID)
	if _, err := jobs.Read(root, agent, jobFor(root, agent, m.ID)); err == nil {
		t.Error("Read = nil error, want one: there is no jobs folder")
	}
	waitSettled(t, root, agent)
}

// TestPreviousRunEnded: a record a dead watcher left "running" on this host
// and boot names its CLI's process group; before running the message
// again, the watcher ends that group if a member still runs for the
// message, and leaves a group that reused the id alone.
func TestPreviousRunEnded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		ours  bool // the group runs for the message (its environment says so)
		ended bool
	}{
		{"left by the previous run", true, true},
		{"id reused by another group", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			m := send(t, root, agent, "again")
			left := exec.Command("sleep", "60")
			left.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if tt.ours {
				left.Env = append(os.Environ(), "COLLAB_MESSAGE_ID="+m.ID)
			}
			if err := left.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { left.Wait(); close(exited) }()
			t.Cleanup(func() { left.Process.Kill(); <-exited })
			rec, err := jobs.Start(root, jobs.Job{ID: oldID(m.Key()), Agent: agent, Host: testHost, Channel: chName,
				Message: m.Key(), PID: left.Process.Pid, Boot: claim.Self(agent).BootID}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = rec // left running: its watcher died

			var endedFirst atomic.Bool
			cfg := config(root, &fakeRunner{reply: func(runCall) (modelcli.Response, error) {
				select {
				case <-exited:
					endedFirst.Store(true)
				default:
				}
				return modelcli.Response{Text: "ok"}, nil
			}})
			cfg.Replay = &watcher.Replay{From: m.Time().Add(-time.Minute)}
			start(t, cfg)
			waitReplies(t, root, m.ID)
			// The new run links to the one its dead watcher left, which
			// is marked interrupted.
			j := waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() })
			if j.ID == oldID(m.Key()) || j.RerunOf != oldID(m.Key()) {
				t.Errorf("rerun %s rerun_of %q, want a new job linked to %s", j.ID, j.RerunOf, oldID(m.Key()))
			}
			if old, err := jobs.Read(root, agent, oldID(m.Key())); err != nil || old.Status != jobs.Interrupted {
				t.Errorf("the left job: %q, %v; want interrupted", old.Status, err)
			}
			if got := endedFirst.Load(); got != tt.ended {
				t.Errorf("the left group ended before the run: %v, want %v", got, tt.ended)
			}
			if tt.ended {
				return
			}
			select {
			case <-exited:
				t.Error("a group that does not run for the message was ended")
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}

// TestJobIDsPerAgent: one message to two agents gives each its own job,
// with distinct ids that both name the message.
func TestJobIDsPerAgent(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	ok := func(runCall) (modelcli.Response, error) { return modelcli.Response{Text: "ok"}, nil }
	for _, a := range []string{agent, "claude"} {
		cfg := config(root, &fakeRunner{reply: ok})
		cfg.Agent = a
		start(t, cfg)
	}
	m := send(t, root, "all", "@codex @claude both of you")
	var ids []string
	for _, a := range []string{agent, "claude"} {
		waitFor(t, a+"'s job", func() bool {
			j, err := jobs.ForMessage(root, a, chName, m.ID)
			if err == nil && j.Done() {
				ids = append(ids, j.ID)
				return true
			}
			return false
		})
	}
	if ids[0] == ids[1] {
		t.Errorf("both agents' jobs are %s: want distinct ids", ids[0])
	}
	if _, err := jobs.Lookup(root, "", m.ID); !errors.Is(err, jobs.ErrAmbiguous) {
		t.Errorf("Lookup by the message id: %v, want ErrAmbiguous", err)
	}
}

// TestCommandJobEvents: a --cli command run's record has its events:
// started, each stderr line as progress, and the error with the exit
// status and the stderr tail.
func TestCommandJobEvents(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	cfg := config(root, helperCLI("script"))
	cfg.CLI = "command"
	start(t, cfg)
	m := send(t, root, agent, "fail please "+kwExit1)
	j := waitJob(t, root, m.ID, "failed", func(j jobs.Job) bool { return j.Status == jobs.Failed })
	if got, want := eventKinds(j.Events), []string{modelcli.EventStarted, modelcli.EventProgress, modelcli.EventProgress, modelcli.EventError}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if j.Events[1].Text != "warming up" || j.Events[2].Text != "boom: the model is unavailable" {
		t.Errorf("progress %q, %q: want the stderr lines", j.Events[1].Text, j.Events[2].Text)
	}
	if e := j.Events[3].Text; !strings.HasPrefix(e, "exit status 1\n") || !strings.Contains(e, "boom: the model is unavailable") {
		t.Errorf("error event %q: want the exit status and the stderr tail", e)
	}
}
