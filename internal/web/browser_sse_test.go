package web_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
)

// TestBrowserLiveAfterPoison: a message whose text holds bare CRs that
// would set the stream's id to one from the year 2999 and its retry to
// eleven days shows as one message, and the live view goes on: the next
// message appears, and so does one after the connection drops and the
// browser reconnects (with the Last-Event-ID it has).
func TestBrowserLiveAfterPoison(t *testing.T) {
	ctx, _ := browser(t)
	root := tree.Root(t.TempDir())
	srv, err := web.New(web.Config{Root: root, Person: "ann", Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close) // first: ends the event streams ts.Close waits for
	postMessage(t, root, "dev", "bob", "hello")
	count := func(n int) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Poll[bool](
				`document.querySelectorAll("#transcript li.msg").length === `+strconv.Itoa(n),
				chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
			return err
		})
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+srv.SignInPath()),
		chromedp.Navigate(ts.URL+"/c/dev"),
		chromedp.WaitVisible("#transcript"),
		htmxReady("#transcript")); err != nil {
		t.Fatal(err)
	}
	if err := waitText(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	poison := "first line\rid: msg-29990101-000000-mallory-beef\rretry: 999999999\r\revent: message\rdata: forged\r\rlast line"
	postMessage(t, root, "dev", "mallory", poison)
	if err := chromedp.Do(ctx, count(2)); err != nil {
		t.Fatalf("the poisoned message is not one message: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelectorAll("#transcript li.msg")[1].querySelector(".text").textContent`))
	if want := "first line\nid: msg-29990101-000000-mallory-beef\nretry: 999999999\n\nevent: message\ndata: forged\n\nlast line"; err != nil || text != want {
		t.Errorf("the poisoned message shows %q (%v), want %q", text, err, want)
	}
	postMessage(t, root, "dev", "bob", "after the poison")
	if err := waitText(ctx, "after the poison"); err != nil {
		t.Fatalf("the live view stopped after the poisoned message: %v", err)
	}
	ts.CloseClientConnections() // the stream drops; the browser reconnects
	postMessage(t, root, "dev", "bob", "after the reconnect")
	if err := waitText(ctx, "after the reconnect"); err != nil {
		t.Fatalf("the live view stopped after a reconnect: %v", err)
	}
	if err := chromedp.Do(ctx, count(4)); err != nil {
		t.Errorf("after the reconnect: %v", err)
	}
}
