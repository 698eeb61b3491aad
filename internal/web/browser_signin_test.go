package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
)

// signInWithToken types token into the sign-in page's form, sends it and
// returns the status of the page it leads to.
func signInWithToken(ctx context.Context, token string) (int64, error) {
	form, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("form.signin #token") !== null`))
	if err != nil || !form {
		return 0, fmt.Errorf("no token form on the page (%v)", err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys("#token", token, chromedp.NodeVisible)); err != nil {
		return 0, err
	}
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(`form.signin button[type="submit"]`, chromedp.NodeVisible))
	if err != nil {
		return 0, err
	}
	return resp.Status, nil
}

// TestBrowserSignInWithToken: signed in through the printed URL and out
// again with the page's button, the browser is back on the sign-in page
// (the URL is spent). Its form takes a person's token: a wrong one gets
// the page again with the error (401), bob's signs the browser in as bob,
// and the page works: a message sent on the bus appears live, and one
// posted from the page lands in the channel from bob.
func TestBrowserSignInWithToken(t *testing.T) {
	ctx, con := browser(t)
	root := tree.Root(t.TempDir())
	toks := web.Tokens{Path: filepath.Join(t.TempDir(), "tokens.json")}
	bob, _, err := toks.New("bob")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Root: root, Person: "ann", Tokens: toks, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close) // first: ends the event streams ts.Close waits for
	post := func(text string) {
		t.Helper()
		if err := (&channel.Writer{Root: root}).Post(&channel.Message{SessionID: "review", From: "reviewer", Content: channel.Content{Text: text}}); err != nil {
			t.Fatal(err)
		}
	}
	post("Looked at the patch.")

	state := func(want string) {
		t.Helper()
		if got, err := pageState(ctx); err != nil || got != want {
			t.Fatalf("%q (%v), want %q", got, err, want)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+srv.SignInPath())); err != nil {
		t.Fatal(err)
	}
	state("signed in as ann")
	if err := signOut(ctx); err != nil {
		t.Fatal(err)
	}
	state("sign-in page")
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+srv.SignInPath())); err != nil {
		t.Fatal(err)
	}
	state("sign-in page") // the URL was spent

	code, err := signInWithToken(ctx, "collab_"+strings.Repeat("0", 64))
	if err != nil || code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d (%v)", code, err)
	}
	state("sign-in page")
	why, err := chromedp.Run(ctx, chromedp.Text("#signin-error", chromedp.NodeVisible))
	if err != nil || why != "That token did not sign you in." {
		t.Errorf("the error shown: %q (%v)", why, err)
	}
	screenshot(t, ctx, "signin-token")

	code, err = signInWithToken(ctx, bob)
	if err != nil || code != http.StatusOK {
		t.Fatalf("bob's token: %d (%v)", code, err)
	}
	state("signed in as bob")
	if err := waitText(ctx, "Looked at the patch."); err != nil {
		t.Fatalf("signing in with the token did not open the channel: %v", err)
	}
	post("Approved.")
	if err := waitText(ctx, "Approved."); err != nil {
		t.Fatalf("a sent message did not appear live: %v", err)
	}
	text := "Thanks, merging."
	postFromPage(t, ctx, text)
	msgs, _, _, err := channel.Newest(root, "review", 10, nil, func(m *channel.Message) bool { return m.Content.Text == text })
	if err != nil || len(msgs) != 1 || msgs[0].From != "bob" {
		t.Errorf("posted from the page: %s (%v), want one message from bob", fmt.Sprint(msgs), err)
	}
	for _, p := range con.problems() {
		// The 401 pages (and their favicons) are logged as failed loads;
		// nothing else may be.
		if !strings.Contains(p, "401") {
			t.Errorf("console: %s", p)
		}
	}
}
