package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pageState waits until the page is either the dashboard (its nav says
// who is signed in) or the sign-in page, and says which: "signed in as
// NAME" or "sign-in page".
func pageState(ctx context.Context) (string, error) {
	for try := 0; ; try++ {
		got, err := pollState(ctx)
		// The page's execution context was replaced under the poll (a
		// navigation that was still settling): ask the new one.
		if err != nil && strings.Contains(err.Error(), "Cannot find context with specified id") && try < 5 {
			continue
		}
		return got, err
	}
}

func pollState(ctx context.Context) (string, error) {
	return chromedp.Run(ctx, chromedp.Poll[string](
		`(() => { const who = document.querySelector("form.who strong");
		  if (who) return "signed in as " + who.textContent;
		  const h = document.querySelector("h1");
		  return h && h.textContent === "Sign in" ? "sign-in page" : null; })()`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
}

// signOut presses the page's "Sign out" and waits for the page it leads
// to: the sign-in page (401).
func signOut(ctx context.Context) error {
	resp, err := chromedp.RunResponse(ctx, chromedp.Click("form.who button"))
	if err != nil {
		return err
	}
	if resp.Status != http.StatusUnauthorized {
		return fmt.Errorf("signing out led to a %d page", resp.Status)
	}
	return nil
}

// TestBrowserSignOut signs in through the printed URL, signs out with the
// page's button, and finds the sign-in page there and on every page after:
// the session is gone, not just the cookie.
func TestBrowserSignOut(t *testing.T) {
	ctx, _ := browser(t)
	d := newDashboard(t)
	d.post(t, d.reviewer, "review", "reviewer", "Looked at the patch.")
	if err := chromedp.Do(ctx, chromedp.Navigate(d.url+d.srv.SignInPath())); err != nil {
		t.Fatal(err)
	}
	if err := waitText(ctx, "Looked at the patch."); err != nil {
		t.Fatalf("signing in did not open the channel: %v", err)
	}
	if got, err := pageState(ctx); err != nil || got != "signed in as ann" {
		t.Fatalf("after signing in: %q (%v)", got, err)
	}
	screenshot(t, ctx, "signed-in")
	if err := signOut(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := pageState(ctx); err != nil || got != "sign-in page" {
		t.Errorf("after signing out: %q (%v)", got, err)
	}
	screenshot(t, ctx, "signed-out")
	for _, path := range []string{"/c/review", "/agents", d.srv.SignInPath()} {
		if err := chromedp.Do(ctx, chromedp.Navigate(d.url+path)); err != nil {
			t.Fatal(err)
		}
		if got, err := pageState(ctx); err != nil || got != "sign-in page" {
			t.Errorf("%s after signing out: %q (%v)", path, got, err)
		}
	}
}

// TestBrowserTwoServers: two dashboards on two ports of 127.0.0.1, one
// browser (cookies do not isolate ports). Signed in to A, the browser is
// not signed in to B; signing in to B, and out of it, leaves A signed in.
func TestBrowserTwoServers(t *testing.T) {
	ctx, _ := browser(t)
	a, b := newDashboard(t), newDashboard(t)
	a.post(t, a.reviewer, "review", "reviewer", "On A.")
	b.post(t, b.reviewer, "review", "reviewer", "On B.")
	state := func(url string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		got, err := pageState(ctx)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		return got
	}
	for _, step := range []struct{ url, want string }{
		{a.url + a.srv.SignInPath(), "signed in as ann"},
		{b.url + "/c/review", "sign-in page"},
		{b.url + b.srv.SignInPath(), "signed in as ann"},
		{a.url + "/c/review", "signed in as ann"},
	} {
		if got := state(step.url); got != step.want {
			t.Errorf("%s: %q, want %q", step.url, got, step.want)
		}
	}
	if err := waitText(ctx, "On A."); err != nil {
		t.Errorf("A's channel: %v", err)
	}
	// Signing out of B ends B's session only.
	if state(b.url+"/c/review") != "signed in as ann" {
		t.Fatal("B lost its session")
	}
	if err := signOut(ctx); err != nil {
		t.Fatalf("signing out of B: %v", err)
	}
	if got := state(a.url + "/c/review"); got != "signed in as ann" {
		t.Errorf("A after signing out of B: %q", got)
	}
	if got := state(b.url + "/c/review"); got != "sign-in page" {
		t.Errorf("B after signing out of it: %q", got)
	}
}
