package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/internal/testsupport/tmuxtest"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// The join rows (collab join): the real Claude Code, interactive under
// tmux on "host B" (a bindfs view of the tree), joined as ana with a 1 s
// poll, against the fake model answering at once; messages posted on
// "host A" (another bindfs view). Idle: from the post to the model call
// that carries the message (the turn it started), one message at a time.
// Busy: a message posted while the session runs a 2 s shell command, from
// the post to its offered mark (the waiting hook took it; Claude Code adds
// it after the running tool, which the figure leaves out).

// joinMessages are the messages per run, idle and busy.
const (
	joinIdle = 10
	joinBusy = 5
)

func (b *bench) join(ctx context.Context) []Figure {
	return append(b.joinRows(ctx, false), b.joinRows(ctx, true)...)
}

// joinRows measures the session polling only (1 s), or woken by NATS.
func (b *bench) joinRows(ctx context.Context, nats bool) []Figure {
	how, max := "poll 1 s", 1000.0
	if nats {
		how, max = "NATS", 100
	}
	specs := []spec{
		{name: "join: message on host A → Claude Code session on host B, idle, to offered (the hook took it), " + how + ": p50", unit: "ms", max: max},
		{name: "join: … idle, to offered, " + how + ": p99", unit: "ms"},
		{name: "join: … idle, to the model call of the turn it started, " + how + ": p50", unit: "ms"},
		{name: "join: … idle, to the model call, " + how + ": p99", unit: "ms"},
		{name: "join: … busy, to offered, " + how + ": p50", unit: "ms", max: max},
		{name: "join: … busy, to offered, " + how + ": p99", unit: "ms"},
	}
	vals, err := b.repeat(ctx, "join "+how, len(specs), func(run int) ([]float64, error) {
		r, err := b.joinRun(ctx, run, nats)
		if err != nil {
			return nil, err
		}
		var out []float64
		for _, d := range [][]time.Duration{r.idleOffered, r.idleModel, r.busyOffered} {
			slices.Sort(d)
			out = append(out, ms(percentile(d, 50)), ms(percentile(d, 99)))
		}
		return out, nil
	})
	var figs []Figure
	for k, s := range specs {
		figs = append(figs, s.figure(vals[k], err))
	}
	return figs
}

// joinRun is one run: a tree with two bindfs views, the session on B.
// joinResult is one run's times from the post.
type joinResult struct{ idleOffered, idleModel, busyOffered []time.Duration }

func (b *bench) joinRun(ctx context.Context, run int, nats bool) (r joinResult, err error) {
	claudePath, err := fakemodel.FindCLI(fakemodel.ClaudeCode)
	if err != nil {
		return r, err
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		return r, err
	}
	exe, err := b.collabBinary(ctx)
	if err != nil {
		return r, err
	}
	base := filepath.Join(b.dir, fmt.Sprintf("join-%d-%v", run, nats))
	backing := tree.Root(filepath.Join(base, "tree"))
	hostA, hostB, unmount, err := b.latencyTree(ctx, layout{twoHosts: true}, base, backing)
	defer unmount()
	if err != nil {
		return r, err
	}
	srv := fakemodel.Start(nil)
	defer srv.Close()
	srv.Script(func(r fakemodel.Request) fakemodel.Reply {
		if _, ok := r.ToolResult(); ok {
			return fakemodel.Text("done.")
		}
		if cmd, ok := strings.CutPrefix(r.Prompt(), "RUN: "); ok {
			return fakemodel.Shell(cmd)
		}
		return fakemodel.Text("noted.")
	})
	cliDir := filepath.Join(base, "claude")
	if err := os.MkdirAll(cliDir, 0o755); err != nil {
		return r, err
	}
	c, err := srv.Setup(fakemodel.ClaudeCode, claudePath, cliDir)
	if err != nil {
		return r, err
	}
	if err := seedClaude(c); err != nil {
		return r, err
	}
	env := append(c.Env, "PATH="+filepath.Dir(c.Path)+":"+os.Getenv("PATH"), "COLLAB_ROOT="+string(hostB))
	var sender *natsbus.Bus
	if nats {
		srv, err := startNATS(filepath.Join(base, "nats"))
		if err != nil {
			return r, err
		}
		defer srv.Shutdown()
		sender, err = natsbus.Connect(ctx, natsbus.Options{URL: srv.ClientURL(), Name: "bench-sender", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return r, err
		}
		defer sender.Close()
		if _, err := sender.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
			return r, err
		}
		env = append(env, "NATS_URL="+srv.ClientURL())
	}
	t, err := tmuxtest.Open(base, c.Dir, env, exe, "join", "--agent", "ana", "--channel", benchChannel, "--poll", "1s", "--", "--allowedTools", "Bash")
	if err != nil {
		return r, err
	}
	defer t.Close()
	if _, err := t.WaitFor(ctx, time.Minute, "for shortcuts"); err != nil {
		return r, err
	}
	w := &channel.Writer{Root: hostA}
	post := func(text string) (channel.Message, time.Time, error) {
		m := channel.Message{SessionID: benchChannel, From: "bob", To: "ana", Content: channel.Content{Text: text}}
		at := time.Now()
		if err := w.Post(&m); err != nil {
			return m, at, err
		}
		if sender != nil {
			return m, at, sender.PublishMessage(ctx, &m)
		}
		return m, at, nil
	}
	for i := range joinIdle {
		n := len(srv.Requests())
		m, at, err := post(fmt.Sprintf("idle message %d", i))
		if err != nil {
			return r, err
		}
		call, err := waitRequestWith(ctx, srv, n, m.ID)
		if err != nil {
			return r, err
		}
		mark, err := waitMark(ctx, backing, m.ID)
		if err != nil {
			return r, err
		}
		r.idleModel = append(r.idleModel, call.Arrived.Sub(at))
		r.idleOffered = append(r.idleOffered, mark.Time.Sub(at))
		if err := waitTurnOver(ctx, srv); err != nil {
			return r, err
		}
	}
	for i := range joinBusy {
		n := len(srv.Requests())
		if err := t.Type("RUN: sleep 2; echo slept"); err != nil {
			return r, err
		}
		if _, err := waitRequestWith(ctx, srv, n, "RUN: sleep 2"); err != nil {
			return r, err
		}
		m, at, err := post(fmt.Sprintf("busy message %d", i))
		if err != nil {
			return r, err
		}
		mark, err := waitMark(ctx, backing, m.ID)
		if err != nil {
			return r, err
		}
		r.busyOffered = append(r.busyOffered, mark.Time.Sub(at))
		if err := waitTurnOver(ctx, srv); err != nil {
			return r, err
		}
	}
	return r, nil
}

// seedClaude writes what a person's first start of Claude Code answers:
// onboarding done, the API key approved, the folder trusted.
func seedClaude(c *fakemodel.CLI) error {
	key := fakemodel.FakeKey
	b, err := json.Marshal(map[string]any{"hasCompletedOnboarding": true, "theme": "dark",
		"customApiKeyResponses": map[string]any{"approved": []string{key[max(len(key)-20, 0):]}, "rejected": []string{}},
		"projects":              map[string]any{c.Dir: map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []string{}}}})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Home, ".claude.json"), b, 0o600)
}

// waitRequestWith waits for a model call after the first n whose
// transcript holds text.
func waitRequestWith(ctx context.Context, srv *fakemodel.Server, n int, text string) (fakemodel.Request, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		reqs := srv.Requests()
		for _, r := range reqs[min(n, len(reqs)):] {
			if strings.Contains(r.Transcript(), text) {
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			return fakemodel.Request{}, fmt.Errorf("no model call with %q within a minute", text)
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return fakemodel.Request{}, err
		}
	}
}

// waitTurnOver waits until the session's turn is over: every model call
// answered, and none for half a second.
func waitTurnOver(ctx context.Context, srv *fakemodel.Server) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return srv.WaitQuiet(ctx, 500*time.Millisecond)
}

// waitMark waits for ana's offered mark of message id.
func waitMark(ctx context.Context, root tree.Root, id string) (delivery.SeenFile, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		if m, err := delivery.ReadMark(root, delivery.KindOffered, benchChannel, "ana", id); err == nil {
			return m, nil
		}
		if time.Now().After(deadline) {
			return delivery.SeenFile{}, fmt.Errorf("%s not offered within a minute", id)
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return delivery.SeenFile{}, err
		}
	}
}
