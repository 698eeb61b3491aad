package watcher_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// codexTranscript is a recorded `codex exec --json` run: it reports
// 9547 input and 4 output tokens, and no cost.
var codexTranscript = filepath.Join("..", "internal", "agent", "modelcli", "testdata", "codex-exec.jsonl")

// TestBudgetCodexTokens: with a CLI that reports only tokens (a recorded
// codex transcript, through the codex adapter's parser), the daily budget
// trips: in USD when the model has a price (the shipped table prices
// gpt-5), in tokens with --budget-tokens, and for a model the table does
// not know, on tokens only, with one warning.
func TestBudgetCodexTokens(t *testing.T) {
	t.Parallel()
	out, err := os.ReadFile(codexTranscript)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		model  string
		usd    float64
		tokens int64
		notice string // in the budget notice
		warned int    // "no price for the model" log lines
	}{
		// gpt-5: 9547 × 1.25 + 4 × 10 per million ≈ 0.012 USD a run.
		{name: "usd", model: "gpt-5", usd: 0.02, notice: "of 0.02 USD"},
		// 9551 tokens a run.
		{name: "tokens", tokens: 15000, notice: "19102 of 15000 tokens"},
		// Unpriced: the tiny USD budget would trip after one run; it
		// counts as free, and the token budget trips after two.
		{name: "unknown model", model: "gpt-5.5", usd: 0.001, tokens: 15000, notice: "tokens", warned: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				root := tree.Root(t.TempDir())
				r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
					resp, err := modelcli.ParseOutput(&codex.Parser{Model: tt.model}, out)
					if resp.CostUSD != 0 || resp.Usage.Tokens() != 9551 {
						t.Errorf("transcript: cost %v, usage %+v; want 0 and 9551 tokens", resp.CostUSD, resp.Usage)
					}
					return resp, err
				}}
				cfg := config(root, r)
				cfg.Now = noonClock().Now
				cfg.BudgetUSD, cfg.BudgetTokens = tt.usd, tt.tokens
				h := start(t, cfg)

				for i := range 2 {
					m := send(t, root, agent, fmt.Sprintf("paid %d", i))
					waitReplies(t, root, m.ID)
				}
				waitPresence(t, root, presence.SubThrottled)
				send(t, root, agent, "waits")
				waitFor(t, "the budget notice", func() bool { return len(notices(messages(t, root))) > 0 })
				holds(t, 15*cfg.Poll, "no run while the budget is spent", func() bool { return len(r.Calls()) == 2 })
				if n := notices(messages(t, root))[0]; !strings.Contains(n.Content.Text, tt.notice) {
					t.Errorf("notice %q, want it to say %q", n.Content.Text, tt.notice)
				}
				if got := len(h.logs.find("no price for the model: its tokens count against the token budget only (add it with --prices)", "model", tt.model)); got != tt.warned {
					t.Errorf("%d price warnings, want %d", got, tt.warned)
				}
			})
		})
	}
}

// TestMaxTurns: a run whose model keeps calling tools is stopped by the
// watcher at MaxTurns, failed with an error event that says so; a run
// within the limit answers.
func TestMaxTurns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
			calls := 1
			if strings.Contains(c.Req.Prompt, "loop") {
				calls = 1000
			}
			for range calls {
				if c.Ctx.Err() != nil {
					return modelcli.Response{}, c.Ctx.Err()
				}
				c.Req.OnEvent(modelcli.Event{Kind: modelcli.EventToolCall, Tool: "shell", Text: "ls"})
			}
			return modelcli.Response{Text: "done after " + fmt.Sprint(calls)}, nil
		}}
		cfg := config(root, r)
		cfg.MaxTurns = 3
		start(t, cfg)

		ok := send(t, root, agent, "one tool call")
		waitReplies(t, root, ok.ID)
		loop := send(t, root, agent, "loop for ever")
		j := waitJob(t, root, loop.ID, "failed", func(j jobs.Job) bool { return j.Status == jobs.Failed })
		tools, last := 0, j.Events[len(j.Events)-1]
		for _, e := range j.Events {
			if e.Kind == modelcli.EventToolCall {
				tools++
			}
		}
		if tools != 3 || last.Kind != modelcli.EventError || !strings.Contains(last.Text, "turn limit reached") {
			t.Errorf("%d tool calls, last event %s %q; want 3 and an error that names the turn limit", tools, last.Kind, last.Text)
		}
		if !strings.Contains(j.Error, "turn limit reached") {
			t.Errorf("job error %q", j.Error)
		}
	})
}

// TestMaxTurnsConfig: a negative limit or token budget is refused.
func TestMaxTurnsConfig(t *testing.T) {
	t.Parallel()
	for _, mod := range []func(*watcher.Config){
		func(c *watcher.Config) { c.MaxTurns = -1 },
		func(c *watcher.Config) { c.BudgetTokens = -1 },
	} {
		cfg := config(tree.Root(t.TempDir()), &fakeRunner{})
		mod(&cfg)
		if err := watcher.Run(context.Background(), cfg); err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v, want a configuration error", err)
		}
	}
}
