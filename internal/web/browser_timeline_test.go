package web_test

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/collabdev/collab/internal/web"
)

// TestBrowserTimeline opens, on a tree with a small workflow
// conversation, a message's page from the channel (its timeline bar: a
// segment per stage, drawn as SVG with no script and nothing the CSP
// refuses) and the instance's page from the workflows list (the sequence
// chart: a lifeline per agent, an arrow per message), and saves both as
// screenshots (message-timeline, workflow-sequence).
func TestBrowserTimeline(t *testing.T) {
	ctx, con := browser(t)
	d := newDashboard(t)
	f := newReviewFlow(t, d.root)

	if err := chromedp.Do(ctx,
		chromedp.Navigate(d.url+d.srv.SignInPath()),
		chromedp.Navigate(d.url+"/c/"+f.Channel),
		chromedp.Click(`#m-`+f.Asked.ID+` a.timeline-link`, chromedp.NodeVisible),
		chromedp.WaitVisible(`section.timeline svg.bar`)); err != nil {
		t.Fatal(err)
	}
	segs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("section.timeline svg.bar g.seg")].map(g => g.dataset.stage)`))
	if err != nil || !slices.Equal(segs, askedStages[1:]) {
		t.Errorf("segments %v (%v), want %v", segs, err, askedStages[1:])
	}
	// Every segment is drawn with a width, side by side across the bar.
	widths, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](
		`[...document.querySelectorAll("svg.bar rect")].map(r => r.getBoundingClientRect().width)`))
	if err != nil || len(widths) != len(segs) || slices.Min(widths) < 10 {
		t.Errorf("segment widths %v (%v)", widths, err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.stages tbody tr").length`))
	if err != nil || rows != len(askedStages) {
		t.Errorf("%d stage rows (%v), want %d", rows, err, len(askedStages))
	}
	screenshot(t, ctx, "message-timeline")

	if err := chromedp.Do(ctx,
		chromedp.Navigate(d.url+"/workflows"),
		chromedp.Click(`#instances a[href="/workflows/review@pr7"]`, chromedp.NodeVisible),
		chromedp.WaitVisible(`svg#sequence`)); err != nil {
		t.Fatal(err)
	}
	lanes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("svg#sequence g.lane")].map(g => g.querySelector("text").textContent)`))
	if want := []string{"ann", "coder@pr7", "reviewer@pr7"}; err != nil || !slices.Equal(lanes, want) {
		t.Errorf("lanes %v (%v), want %v", lanes, err, want)
	}
	kinds, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("svg#sequence g.msg-row")].map(g => g.dataset.kind)`))
	if want := []string{"request", "request", "reply", "reply", "reply", "request"}; err != nil || !slices.Equal(kinds, want) {
		t.Errorf("rows %v (%v), want %v", kinds, err, want)
	}
	// Each arrow goes from its sender's lifeline to its addressee's.
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const x = {};
		document.querySelectorAll("svg#sequence g.lane").forEach(g => x[g.querySelector("text").textContent] = g.querySelector("line").getAttribute("x1"));
		const arrows = [...document.querySelectorAll("svg#sequence line.arrow")];
		return arrows.length === 5 && arrows.every(a => a.getAttribute("x2") === x[a.dataset.to]);
	})()`))
	if err != nil || !ok {
		t.Errorf("arrows do not end on their addressees' lifelines (%v)", err)
	}
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelectorAll("svg#sequence g.msg-row")[1].querySelector("a").getAttribute("href")`))
	if err != nil || href != web.MessageURL(f.Channel, f.Asked.ID) {
		t.Errorf("the second row links %q (%v), want the message's page", href, err)
	}
	screenshot(t, ctx, "workflow-sequence")
	if p := con.problems(); len(p) > 0 {
		t.Errorf("console: %v", p)
	}
}
