package web_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/presence"
)

// TestBrowserWork opens the task board and sees each task in its state's
// column; edits a document while another writer changes it underneath,
// saves, and sees the conflict (the other text and version, the person's
// text kept) with the file not overwritten; and stops a workflow instance
// and a delegated worktree from the workflows page.
func TestBrowserWork(t *testing.T) {
	ctx, con := browser(t)
	d := newDashboard(t)
	d.post(t, d.reviewer, "review", "reviewer", "Board updated: t3 is done, t4 failed (no arm64 runner).")
	host, _ := os.Hostname()
	alive := func(agent, ch string) {
		t.Helper()
		if err := presence.Write(d.root, presence.Status{AgentID: agent, State: presence.StateAwake, Substate: presence.SubIdle,
			Host: host, WatcherPID: os.Getpid(), Channel: ch, Timestamp: presence.FormatTime(time.Now())}); err != nil {
			t.Fatal(err)
		}
	}

	// The board: t1 claimed by coder, t2 waits for it, t3 done, t4 failed,
	// t5 blocked by the failed t4.
	b, err := task.New(d.root, "review")
	if err != nil {
		t.Fatal(err)
	}
	for _, nt := range []task.NewTask{
		{Title: "Renew leases before they lapse", By: "ann"},
		{Title: "Document the lease renewal", Depends: []string{"t1"}, By: "ann"},
		{Title: "Fix the flaky NFS rename test", By: "ann"},
		{Title: "Port the bench to arm64", By: "ann"},
		{Title: "Publish the arm64 numbers", Depends: []string{"t4"}, By: "ann"},
	} {
		if _, err := b.Add(nt); err != nil {
			t.Fatal(err)
		}
	}
	alive("coder", "review")
	for _, step := range []func() (task.Task, error){
		func() (task.Task, error) { return b.Claim("t1", "coder") },
		func() (task.Task, error) { return b.Checkpoint("t1", "coder", "renewal loop written; testing expiry") },
		func() (task.Task, error) { return b.Claim("t3", "coder") },
		func() (task.Task, error) { return b.Finish("t3", "coder", "the rename now retries on ESTALE") },
		func() (task.Task, error) { return b.Claim("t4", "coder") },
		func() (task.Task, error) { return b.Fail("t4", "coder", "no arm64 runner") },
	} {
		if _, err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(d.url+d.srv.SignInPath()),
		chromedp.Click(`nav .work-links a[href="/tasks"]`, chromedp.NodeVisible),
		chromedp.WaitVisible(`#taskboard [data-state="claimed"] [data-id="t1"]`)); err != nil {
		t.Fatal(err)
	}
	where, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](
		`Object.fromEntries([...document.querySelectorAll("#taskboard li.task")].map(e => [e.dataset.id, e.closest("section").dataset.state]))`))
	if err != nil || where["t1"] != "claimed" || where["t2"] != "pending" || where["t3"] != "done" || where["t4"] != "failed" || where["t5"] != "pending" {
		t.Errorf("columns %v (%v)", where, err)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](
		`Object.fromEntries([...document.querySelectorAll("#taskboard [data-state=pending] li.task")].map(e => [e.dataset.id, e.querySelector(".blocked, .ready").textContent]))`))
	if err != nil || states["t2"] != "pending, waits for t1" || states["t5"] != "pending, blocked by failed t4" {
		t.Errorf("the pending tasks read %q (%v); want t2 waiting for t1, t5 blocked by the failed t4", states, err)
	}
	screenshot(t, ctx, "tasks")

	// The document: read it, edit, and meanwhile another writer saves.
	f, err := documents.New(d.root, "review", documents.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create(context.Background(), "notes.md", "# Lease renewal\n\nRenew at half the lease.\n"); err != nil {
		t.Fatal(err)
	}
	mine := "# Lease renewal\n\nRenew at a third of the lease, with jitter.\n"
	if err := chromedp.Do(ctx,
		chromedp.Click(`nav .work-links a[href="/docs"]`, chromedp.NodeVisible),
		chromedp.Click(`#docs a`, chromedp.NodeVisible),
		chromedp.WaitVisible(`#docedit textarea`),
		chromedp.SetValue(`#docedit textarea`, mine),
		htmxReady(`#docedit`)); err != nil {
		t.Fatal(err)
	}
	old, _ := f.Read("notes.md")
	theirs := "# Lease renewal\n\nRenew at half the lease; never below 5 s.\n"
	v2, err := f.Write(context.Background(), "notes.md", theirs, old.Version)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(`#docedit button`),
		chromedp.WaitVisible(`#conflict`)); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[document.querySelector("#conflict pre.theirs").textContent, document.querySelector("#conflict code.version").textContent, document.querySelector("#docedit textarea").value, document.querySelector("#docedit input[name=version]").value]`))
	if err != nil || len(shown) != 4 || shown[0] != theirs || shown[1] != v2 || shown[2] != mine || shown[3] != v2 {
		t.Errorf("the conflict shows %q (%v); want their text, version %s, my text", shown, err, v2)
	}
	if now, _ := f.Read("notes.md"); now.Content != theirs {
		t.Fatalf("the document was overwritten: %q", now.Content)
	}
	screenshot(t, ctx, "doc-conflict")

	// Stop a workflow instance and a delegated worktree.
	agent := "coder" + workflow.Sep + "w1"
	if err := workflow.WriteRecord(d.root, &workflow.Record{Name: "lease", Instance: "w1", File: "lease.yaml", Host: host, PID: os.Getpid(),
		Started: time.Now().UTC(), Status: workflow.Running, Agents: []string{agent}, Channel: "lease-w1"}); err != nil {
		t.Fatal(err)
	}
	alive(agent, "lease-w1")
	if err := sessions.Create(d.root, &sessions.Session{ID: "ab12", Agent: "ann-ab12", DelegatedBy: "ann", Depth: 1, Repo: "/src/repo",
		Worktree: "/src/wt-ab12", Branch: "delegate/ab12", Base: "main", Channel: sessions.Channel("ab12"), CLI: "claude", Host: host,
		Created: time.Now().UTC(), Status: sessions.Running}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(`nav .work-links a[href="/workflows"]`, chromedp.NodeVisible),
		chromedp.WaitVisible(`#delegations`),
		htmxReady(`#instances tr[data-id="lease@w1"] form`),
		chromedp.Click(`#instances tr[data-id="lease@w1"] button.stop`, chromedp.NodeVisible),
		chromedp.WaitVisible(`#notice`)); err != nil {
		t.Fatal(err)
	}
	if stop, _ := workflow.StopRequested(d.root, "lease", "w1", os.Geteuid()); !stop {
		t.Error("no stop file after the stop button")
	}
	if err := chromedp.Do(ctx,
		htmxReady(`#delegations tr[data-id="ab12"] form`),
		chromedp.Click(`#delegations tr[data-id="ab12"] button.stop`, chromedp.NodeVisible),
		chromedp.WaitVisible(`#delegations tr[data-id="ab12"] td.status[data-status="stopped"]`)); err != nil {
		t.Fatal(err)
	}
	if s, err := sessions.Read(d.root, "ab12"); err != nil || s.Status != sessions.Stopped {
		t.Errorf("session after stop: %+v %v", s, err)
	}
	// The refused save is a 409, which the browser logs; nothing else.
	p := slices.DeleteFunc(con.problems(), func(m string) bool { return strings.Contains(m, "status of 409 (Conflict)") })
	if len(p) > 0 {
		t.Errorf("console: %q", p)
	}
}
