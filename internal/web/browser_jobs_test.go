package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
)

// TestBrowserJobEvents opens an agent's page while its job runs: the
// events the record holds are shown, each one the watcher adds (from Go,
// as jobs.Recorder does) appears live, and the job's end closes the
// stream without an error in the console.
func TestBrowserJobEvents(t *testing.T) {
	ctx, con := browser(t)
	d := newDashboard(t)
	d.post(t, d.ann, "review", "ann", "@reviewer please look at the lease renewal patch")
	clock := time.Date(2026, 11, 25, 9, 30, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock } // every event written at once
	rec, err := jobs.Start(d.root, jobs.Job{ID: jobs.NewID(), Agent: "reviewer", Host: "build-1", Channel: "review",
		Message: "msg-20261125-093000-ann-1a2b", From: "ann", CLI: "claude"}, now)
	if err != nil {
		t.Fatal(err)
	}
	rec.Event(modelcli.Event{Kind: modelcli.EventStarted, Text: "session 7f3a"})
	id := rec.Job().ID
	list := `#events-` + id + ` ol.events`
	count := func(n int) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Poll[bool](
				`document.querySelectorAll(`+jsString(list+` li.event`)+`).length === `+strconv.Itoa(n),
				chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
			return err
		})
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(d.url+d.srv.SignInPath()),
		chromedp.Navigate(d.url+"/agents/reviewer"),
		chromedp.WaitVisible(list),
		htmxReady(list),
		count(1)); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#events-`+id+`") ? document.querySelector("#events-`+id+`").outerHTML : document.body.innerHTML.slice(0, 3000)`))
		t.Fatalf("%v\n%s", err, html)
	}
	rec.Event(modelcli.Event{Kind: modelcli.EventToolCall, Tool: "Read", Text: "internal/lease/renew.go"})
	rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: "The renewal races the expiry check; <b>two</b> nits."})
	if err := chromedp.Do(ctx, count(3)); err != nil {
		t.Fatalf("new events did not appear live: %v", err)
	}
	texts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(`+jsString(list+` li.event`)+`)].map(e => e.dataset.kind + ":" + e.querySelector(".text").textContent)`))
	want := "started:session 7f3a|tool_call:internal/lease/renew.go|progress:The renewal races the expiry check; <b>two</b> nits."
	if got := strings.Join(texts, "|"); err != nil || got != want {
		t.Errorf("events %q (%v), want %q", got, err, want)
	}
	screenshot(t, ctx, "job-events")
	rec.Finish(jobs.Completed, modelcli.Response{}, nil)
	rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: "never sent"}) // after the end
	if err := chromedp.Do(ctx, chromedp.Sleep(500*time.Millisecond), count(3)); err != nil {
		t.Fatal(err)
	}
	if p := con.problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}
}
