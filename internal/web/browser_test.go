package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
	"github.com/collabdev/collab/presence"
)

// browser starts a headless chromium for the test, or skips when there is
// none (fails instead with COLLAB_TEST_REQUIRE_CHROMIUM=1, as CI sets).
// The console collects what the pages write to it.
func browser(t *testing.T) (context.Context, *console) {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("COLLAB_TEST_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no chromium on PATH, and COLLAB_TEST_REQUIRE_CHROMIUM=1")
		}
		t.Skip("no chromium on PATH (set COLLAB_TEST_REQUIRE_CHROMIUM=1 to fail instead)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1200, 760),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTime(); cancelCtx(); cancelAlloc() })
	c := &console{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			c.add(m)
		}
	}()
	return ctx, c
}

// postFromPage types text into the page's post box, sends it, and waits
// until it comes back through the event stream.
func postFromPage(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		htmxReady("#post"),
		chromedp.SendKeys("#post-text", text, chromedp.NodeVisible),
		chromedp.Click(`#post button[type="submit"]`, chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	if err := waitText(ctx, text); err != nil {
		t.Fatalf("the posted message did not appear: %v", err)
	}
}

// console is what the pages wrote to the browser's console.
type console struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func (c *console) add(m chromedp.ConsoleMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m)
}

// problems returns the errors, warnings and uncaught exceptions (a
// script the CSP refused is one, and so is a file not found).
func (c *console) problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
			out = append(out, string(m.Type)+": "+m.Text)
		}
	}
	return out
}

// dashboard is a served tree with one person, ann, who has a trusted key
// (so what the page posts is signed), and one agent, reviewer, likewise.
type dashboard struct {
	root     tree.Root
	srv      *web.Server
	url      string
	ann      *signing.Signer
	reviewer *signing.Signer
}

func newDashboard(t *testing.T) *dashboard {
	t.Helper()
	root := tree.Root(t.TempDir())
	keys := t.TempDir()
	ann, err := signing.NewKey(filepath.Join(keys, "ann.key"), "ann", false)
	if err != nil {
		t.Fatal(err)
	}
	reviewer, err := signing.NewKey(filepath.Join(keys, "reviewer.key"), "reviewer", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(root.Keys())
	if err := ring.Create(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*signing.Signer{ann, reviewer} {
		if err := ring.Trust(s.Agent(), s.PublicKey()); err != nil {
			t.Fatal(err)
		}
	}
	beat := presence.Status{AgentID: "reviewer", State: presence.StateAwake, Substate: presence.SubIdle, Channel: "review",
		Host: "build-1", Timestamp: presence.FormatTime(time.Now())}
	beat.Sign(reviewer)
	if err := presence.Write(root, beat); err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Root: root, Person: "ann", Signer: ann,
		Verifier: signing.NewVerifier(ring), Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close) // first: ends the event streams ts.Close waits for
	return &dashboard{root: root, srv: srv, url: ts.URL, ann: ann, reviewer: reviewer}
}

// post writes a message into a channel as the CLI's send does.
func (d *dashboard) post(t *testing.T, s *signing.Signer, ch, from, text string) channel.Message {
	t.Helper()
	w := channel.Writer{Root: d.root, Signer: s}
	m := channel.Message{SessionID: ch, From: from, Content: channel.Content{Text: text}}
	if err := w.Post(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitText waits until the transcript holds text (the context bounds it).
func waitText(ctx context.Context, text string) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`document.querySelector("#transcript") !== null && document.querySelector("#transcript").textContent.includes(`+jsString(text)+`)`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
	return err
}

// htmxReady waits until htmx has processed the element sel matches (a
// swapped-in form submits through htmx only from then on).
func htmxReady(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](
			`(e => e !== null && e["htmx-internal-data"] !== undefined && e["htmx-internal-data"].initHash !== undefined)(document.querySelector(`+jsString(sel)+`))`,
			chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
		return err
	})
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "<", `\x3c`)
	return `"` + r.Replace(s) + `"`
}

// screenshot saves the page as NAME.png in $COLLAB_SCREENSHOTS, when set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("COLLAB_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserChannel signs in through the printed URL, watches a message
// sent on the bus appear live, posts from the page and finds the message
// in the channel, signed by ann.
func TestBrowserChannel(t *testing.T) {
	ctx, con := browser(t)
	d := newDashboard(t)
	nits := d.post(t, d.reviewer, "review", "reviewer", "Looked at the patch for the lease renewal: two nits, otherwise good.")
	d.post(t, nil, "review", "builder", "CI is green on 4f2c1e0.")
	asked := channel.Message{SessionID: "review", From: "ann", To: "reviewer", Content: channel.Content{Text: "@reviewer can you also check the retry path?"}}
	if err := (&channel.Writer{Root: d.root}).Post(&asked); err != nil {
		t.Fatal(err)
	}
	past := channel.Writer{Root: d.root, Now: func() time.Time { return time.Now().Add(-time.Hour) }}
	if err := past.Post(&channel.Message{SessionID: "older", From: "builder", Content: channel.Content{Text: "an older channel"}}); err != nil {
		t.Fatal(err)
	}

	// The sign-in URL opens the most recently active channel.
	if err := chromedp.Do(ctx, chromedp.Navigate(d.url+d.srv.SignInPath())); err != nil {
		t.Fatal(err)
	}
	if err := waitText(ctx, "two nits"); err != nil {
		t.Fatalf("the channel did not open: %v", err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasSuffix(loc, "/c/review") {
		t.Fatalf("opened %q (%v), want the most recent channel, /c/review", loc, err)
	}
	marks, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#transcript .msg")].map(e => e.dataset.verdict + " " + e.querySelector(".mark").textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(marks) // one second: the order within it is the names'
	if got, want := strings.Join(marks, "|"), "unsigned (unsigned)|unsigned [UNSIGNED]|verified ✓"; got != want {
		t.Errorf("verdict marks %q, want %q", got, want)
	}

	// A message sent on the bus appears without a reload.
	d.post(t, d.reviewer, "review", "reviewer", "Approved. Merging after the docs land:\n```sh\ngit merge --ff-only lease-renewal\n```")
	if err := waitText(ctx, "Merging after the docs land"); err != nil {
		t.Fatalf("a sent message did not appear live: %v", err)
	}

	// Posting from the page writes a message signed by ann; it comes back
	// through the event stream.
	text := "Thanks both: docs are in, go ahead."
	postFromPage(t, ctx, text)
	msgs, _, _, err := channel.Newest(d.root, "review", 10, nil, func(m *channel.Message) bool { return m.Content.Text == text })
	if err != nil || len(msgs) != 1 {
		t.Fatalf("posted message in the channel: %d found (%v), want 1", len(msgs), err)
	}
	ring := keyring.Open(d.root.Keys())
	if got := msgs[0].Verify(signing.NewVerifier(ring), "review"); msgs[0].From != "ann" || got != signing.Verified {
		t.Errorf("posted message from %q with verdict %v, want ann, verified", msgs[0].From, got)
	}
	box, err := chromedp.Run(ctx, chromedp.Value("#post-text"))
	if err != nil || box != "" {
		t.Errorf("post box after posting: %q (%v), want empty", box, err)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#transcript .msg").length`))
	if err != nil || n != 5 {
		t.Errorf("transcript holds %d messages (%v), want 5 (each once)", n, err)
	}
	screenshot(t, ctx, "channel")
	if p := con.problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}

	// A refused post keeps the text and says why (the browser logs the
	// 400, so after the console check).
	if err := chromedp.Do(ctx,
		htmxReady("#post"),
		chromedp.SendKeys("#post-text", "   ", chromedp.NodeVisible),
		chromedp.Click(`#post button[type="submit"]`, chromedp.NodeVisible),
		chromedp.WaitVisible("#post .error")); err != nil {
		t.Fatal(err)
	}
	why, err := chromedp.Run(ctx, chromedp.Text("#post .error"))
	if err != nil || !strings.Contains(why, "empty") {
		t.Errorf("refusal shown: %q (%v), want the text is empty", why, err)
	}

	// Reply to the reviewer's first message: the post answers it.
	first := `//li[contains(., "two nits")]//button[contains(@class, "reply")]`
	if err := chromedp.Do(ctx,
		chromedp.Click(first, chromedp.NodeVisible),
		chromedp.WaitVisible("#post .replying"),
		htmxReady("#post"),
		chromedp.SendKeys("#post-text", "Which nits?", chromedp.NodeVisible),
		chromedp.Click(`#post button[type="submit"]`, chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	if err := waitText(ctx, "Which nits?"); err != nil {
		t.Fatalf("the reply did not appear: %v", err)
	}
	replies, _, _, err := channel.Newest(d.root, "review", 10, nil, func(m *channel.Message) bool { return m.Content.Text == "Which nits?" })
	if err != nil || len(replies) != 1 || replies[0].Metadata.InReplyTo != nits.ID {
		t.Errorf("reply: %+v (%v), want one in reply to %s", replies, err, nits.ID)
	}
}

// TestBrowserEscapes posts script and HTML into a channel, as the page
// first shows it and live, and checks that it shows as text and nothing
// runs.
func TestBrowserEscapes(t *testing.T) {
	ctx, con := browser(t)
	d := newDashboard(t)
	probe := `<script>window.__x=1</script><img src=x onerror="window.__x=2"><b onmouseover="window.__x=3">bold</b>`
	d.post(t, nil, "probe", "mallory", "first "+probe)
	if err := chromedp.Do(ctx, chromedp.Navigate(d.url+d.srv.SignInPath())); err != nil {
		t.Fatal(err)
	}
	if err := waitText(ctx, "first <script>"); err != nil {
		t.Fatalf("the probe is not shown as text: %v", err)
	}
	d.post(t, nil, "probe", "mallory", "live "+probe)
	if err := waitText(ctx, "live <script>"); err != nil {
		t.Fatalf("the live probe is not shown as text: %v", err)
	}
	// Give an image error handler the time to run, were there an image.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise(r => setTimeout(() => r(true), 300))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	ran, err := chromedp.Run(ctx, chromedp.Evaluate[string](`typeof window.__x`))
	if err != nil || ran != "undefined" {
		t.Errorf("window.__x is %s (%v): the probe ran", ran, err)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#transcript script, #transcript img, #transcript b").length`))
	if err != nil || n != 0 {
		t.Errorf("%d elements from message text in the transcript (%v), want 0", n, err)
	}
	screenshot(t, ctx, "escapes")
	if p := con.problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}
}

// TestBrowserOlder scrolls a channel back by a page with the "Older
// messages" button.
func TestBrowserOlder(t *testing.T) {
	ctx, con := browser(t)
	d := newDashboard(t)
	start := time.Now().Add(-time.Hour)
	for i := range web.PageMessages + 5 {
		w := channel.Writer{Root: d.root, Now: func() time.Time { return start.Add(time.Duration(i) * time.Second) }}
		if err := w.Post(&channel.Message{SessionID: "big", From: "bot", Content: channel.Content{Text: fmt.Sprintf("number %03d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(d.url+d.srv.SignInPath())); err != nil {
		t.Fatal(err)
	}
	if err := waitText(ctx, "number 054"); err != nil {
		t.Fatal(err)
	}
	// The page opens at the transcript's end and stays there as messages
	// arrive (static/page.js).
	atEnd := chromedp.Poll[bool](`window.scrollY > 0 && window.innerHeight + window.scrollY >= document.body.scrollHeight - 2`,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))
	if _, err := chromedp.Run(ctx, atEnd); err != nil {
		t.Errorf("the page did not open at the end: %v", err)
	}
	d.post(t, nil, "big", "bot", "number 055, live")
	if err := waitText(ctx, "number 055, live"); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, atEnd); err != nil {
		t.Errorf("a live message did not keep the end in view: %v", err)
	}
	if err := chromedp.Do(ctx, htmxReady("li.older button"), chromedp.Click("li.older button", chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	if err := waitText(ctx, "number 000"); err != nil {
		t.Fatalf("the older page did not come: %v", err)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#transcript .msg").length + document.querySelectorAll("#transcript li.older").length * 1000`))
	if err != nil || n != web.PageMessages+6 {
		t.Errorf("transcript: %d (messages, plus 1000 per older button) (%v), want %d", n, err, web.PageMessages+6)
	}
	if p := con.problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}
}

// TestBrowserAgents opens the agents page from the nav and sees a new
// agent's heartbeat appear without a reload.
func TestBrowserAgents(t *testing.T) {
	ctx, con := browser(t)
	d := newDashboard(t)
	d.post(t, d.reviewer, "review", "reviewer", "on it")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(d.url+d.srv.SignInPath()),
		chromedp.Click(`nav .agents-link a`, chromedp.NodeVisible),
		chromedp.WaitVisible("#agent-reviewer")); err != nil {
		t.Fatal(err)
	}
	if err := presence.Write(d.root, presence.Status{AgentID: "coder", State: presence.StateAwake, Substate: presence.SubWorking,
		Channel: "review", Host: "build-2", Channels: []string{"review", "ops"}, Backlog: 2, MessageID: "msg-20261125-001500-ann-1a2b"}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#agent-coder")); err != nil {
		t.Fatalf("a new heartbeat did not appear: %v", err)
	}
	marks, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#board tbody tr")].map(r => r.id + ":" + (r.querySelector(".mark") ? r.querySelector(".mark").textContent : ""))`))
	if got, want := strings.Join(marks, " "), "agent-coder:(unsigned) agent-reviewer:"; err != nil || got != want {
		t.Errorf("board marks %q (%v), want %q", got, err, want)
	}
	screenshot(t, ctx, "agents")
	if p := con.problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}

	// Kill coder's running job from its page: the kill file is ann's,
	// signed.
	rec, err := jobs.Start(d.root, jobs.Job{ID: jobs.NewID(), Agent: "coder", Host: "build-2", Channel: "review",
		Message: "msg-20261125-001500-ann-1a2b", From: "ann", CLI: "claude"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := rec.Job().ID
	if err := chromedp.Do(ctx,
		chromedp.Click(`#agent-coder td.agent a`, chromedp.NodeVisible),
		chromedp.WaitVisible(`#jobs button.kill`),
		htmxReady(`#jobs button.kill`),
		chromedp.Click(`#jobs button.kill`),
		chromedp.WaitVisible(`#jobs .killing`)); err != nil {
		t.Fatal(err)
	}
	k, err := jobs.ReadKill(d.root, "coder", id)
	if err != nil {
		t.Fatal(err)
	}
	if v := k.Verify(signing.NewVerifier(keyring.Open(d.root.Keys())), "coder", id); k.By != "ann" || v != signing.Verified {
		t.Errorf("kill request by %q, %v; want ann, verified", k.By, v)
	}
}

// TestBrowserQuestion answers a watcher's needs_input question with its
// option button: the answer is ann's signed reply to the question, to
// the agent that asked.
func TestBrowserQuestion(t *testing.T) {
	ctx, con := browser(t)
	d := newDashboard(t)
	ask := d.post(t, d.ann, "review", "ann", "@reviewer please clean the build cache")
	q := channel.Message{SessionID: "review", From: "reviewer", To: "ann",
		Content: channel.Content{Text: "Claude wants to run: rm -rf ./build/cache\n\nReply with one of: allow, deny."}}
	q.SetParent(&ask)
	q.SetExtension("needs_input", []byte(`{"job":"job-019a5e1c-7f3b-7c41-9d2e-55e0b0a1c3f7","options":["allow","deny"],"allow":["Bash(rm -rf ./build/cache)"]}`))
	if err := (&channel.Writer{Root: d.root, Signer: d.reviewer}).Post(&q); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(d.url+d.srv.SignInPath()),
		chromedp.WaitVisible(`button.answer[data-option="allow"]`),
		htmxReady(`button.answer[data-option="allow"]`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "question")
	if err := chromedp.Do(ctx, chromedp.Click(`button.answer[data-option="allow"]`)); err != nil {
		t.Fatal(err)
	}
	var answers []channel.Message
	for range 100 {
		var err error
		answers, _, _, err = channel.Newest(d.root, "review", 10, nil, func(m *channel.Message) bool { return m.Metadata.InReplyTo == q.ID })
		if err != nil {
			t.Fatal(err)
		}
		if len(answers) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(answers) != 1 {
		t.Fatalf("%d answers to the question, want 1", len(answers))
	}
	a := answers[0]
	v := a.Verify(signing.NewVerifier(keyring.Open(d.root.Keys())), "review")
	if a.From != "ann" || a.To != "reviewer" || a.Content.Text != "allow" || v != signing.Verified {
		t.Errorf("answer from %s to %s %q, %v; want ann to reviewer \"allow\", verified", a.From, a.To, a.Content.Text, v)
	}
	if p := con.problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}
}

// waitJS waits until the expression is true (the context bounds it).
func waitJS(ctx context.Context, expr string) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
	return err
}

// TestBrowserThreads checks replies fold under the first message of their
// thread, and a reply sent from Go folds there live (making the thread
// when it had none); the channel list counts another channel's unread
// messages; typing @ in the post box offers the agents with a heartbeat,
// chosen with the keyboard.
func TestBrowserThreads(t *testing.T) {
	ctx, con := browser(t)
	d := newDashboard(t)
	if err := presence.Write(d.root, presence.Status{AgentID: "coder", State: presence.StateAwake, Substate: presence.SubIdle,
		Channel: "review", Host: "build-2", Timestamp: presence.FormatTime(time.Now())}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		d.post(t, nil, "ops", "builder", fmt.Sprint("nightly build ", i, " is green"))
	}
	replyTo := func(parent channel.Message, s *signing.Signer, from, text string) channel.Message {
		m := channel.Message{SessionID: parent.SessionID, From: from, Content: channel.Content{Text: text}}
		m.SetParent(&parent)
		if err := (&channel.Writer{Root: d.root, Signer: s}).Post(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	plan := d.post(t, d.ann, "review", "ann", "Plan for the lease renewal: renew at half the TTL, give up after three misses.")
	replyTo(plan, d.reviewer, "reviewer", "Half the TTL is fine; log each miss.")
	other := d.post(t, d.reviewer, "review", "reviewer", "Separate question: who owns the retry budget?")
	if err := chromedp.Do(ctx, chromedp.Navigate(d.url+d.srv.SignInPath())); err != nil {
		t.Fatal(err)
	}
	if err := waitText(ctx, "log each miss"); err != nil {
		t.Fatal(err)
	}
	folded := `document.querySelector("#replies-` + plan.ID + `") !== null && document.querySelector("#replies-` + plan.ID + `").textContent.includes("log each miss")`
	if err := waitJS(ctx, folded); err != nil {
		t.Fatalf("the reply is not folded under its first message: %v", err)
	}
	live := replyTo(plan, nil, "coder", "Renewal is in, with the misses logged.")
	if err := waitJS(ctx, `document.querySelector("#replies-`+plan.ID+` #m-`+live.ID+`") !== null`); err != nil {
		t.Fatalf("a live reply did not fold under its first message: %v", err)
	}
	first := replyTo(other, nil, "coder", "I do, for now.")
	if err := waitJS(ctx, `document.querySelector("#m-`+other.ID+` details.thread #m-`+first.ID+`") !== null`); err != nil {
		t.Fatalf("a live first reply did not make a thread: %v", err)
	}
	summaries, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#transcript > li > details.thread > summary")].map(s => s.textContent)`))
	if got := strings.Join(summaries, "|"); err != nil || got != "2 replies|1 reply" {
		t.Errorf("thread summaries %q (%v), want 2 replies|1 reply", got, err)
	}
	top, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#transcript > li.msg").length`))
	if err != nil || top != 2 {
		t.Errorf("%d messages at the top of the transcript (%v), want 2", top, err)
	}
	unread, err := chromedp.Run(ctx, chromedp.Text(`nav a[href="/c/ops"] + .unread`))
	if err != nil || unread != "3" {
		t.Errorf("#ops unread %q (%v), want 3", unread, err)
	}

	// @ completion: the agents with a heartbeat; ↓ then Enter takes the
	// second.
	if err := chromedp.Do(ctx,
		chromedp.Click(`#m-`+plan.ID+` > details.thread > summary`, chromedp.NodeVisible),
		htmxReady("#post"),
		chromedp.SendKeys("#post-text", "thanks @", chromedp.NodeVisible),
		chromedp.WaitVisible(`#post-mention-list li[data-name="reviewer"]`)); err != nil {
		t.Fatal(err)
	}
	offered, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#post-mention-list li")].map(l => l.dataset.name)`))
	if got := strings.Join(offered, " "); err != nil || got != "coder reviewer" {
		t.Errorf("offered %q (%v), want coder reviewer", got, err)
	}
	screenshot(t, ctx, "threads")
	if err := chromedp.Do(ctx, chromedp.SendKeys("#post-text", kb.ArrowDown+"\r")); err != nil {
		t.Fatal(err)
	}
	box, err := chromedp.Run(ctx, chromedp.Value("#post-text"))
	if err != nil || box != "thanks @reviewer " {
		t.Errorf("post box %q (%v), want the mention taken", box, err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys("#post-text", "and @co"+"\t")); err != nil {
		t.Fatal(err)
	}
	if box, err = chromedp.Run(ctx, chromedp.Value("#post-text")); err != nil || box != "thanks @reviewer and @coder " {
		t.Errorf("post box %q (%v), want Tab to take the only offer", box, err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#post-mention-list").length`)); err != nil || n != 0 {
		t.Errorf("the offer list is still open (%d, %v)", n, err)
	}
	if p := con.problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}
}
