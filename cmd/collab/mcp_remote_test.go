package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/mcptest"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/presence"
)

// mcpClient runs `collab mcp` in this process with args and env and
// returns the SDK's client connected to it; the server ends with the test.
func mcpClient(t *testing.T, env map[string]string, args ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"mcp"}, args...), func(k string) string { return env[k] }, inR, outW, stderr)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect: %v (stderr %q)", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		if err := <-done; err != nil {
			t.Errorf("collab mcp: %v (stderr %q)", err, stderr.String())
		}
		cancel()
	})
	return cs, stderr
}

// callTool calls a tool as the SDK's client does (mcptest.Call).
var callTool = mcptest.Call

// TestMCPRemote: `collab mcp --remote` on a host whose --root does not
// exist serves the same tools as on the mount, through a real `collab
// bridge`: what it posts lands on the mount signed and verified, it reads
// and acknowledges what people post there, works the documents and the
// task board, and send_and_wait gets a reply written on the mount
// (through the bridge's publisher and the stream). Delegation says it is
// not available here.
func TestMCPRemote(t *testing.T) {
	s := newRemoteWatchSetup(t, "rem", "mnt")
	state := filepath.Join(t.TempDir(), "state")
	absent := filepath.Join(t.TempDir(), "no-such-mount")
	env := map[string]string{"NATS_URL": s.url, "COLLAB_KEY": s.keys["rem"], "COLLAB_STATE_DIR": state, "COLLAB_ROOT": absent}
	s.awaitBridge(t, map[string]string{"NATS_URL": s.url, "COLLAB_REMOTE": "1", "COLLAB_STATE_DIR": state, "COLLAB_ROOT": absent})
	cs, _ := mcpClient(t, env, "--remote", "--agent", "rem", "--channel", "dev", "--poll", "50ms")
	mounted, _ := mcpClient(t, map[string]string{"COLLAB_ROOT": string(s.mount)}, "--agent", "rem", "--channel", "dev")

	// The same tools as on the mount.
	names := func(cs *mcp.ClientSession) []string {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(cs), names(mounted); !slices.Equal(got, want) || len(got) != 27 {
		t.Fatalf("remote tools %q; mounted %q", got, want)
	}

	// channel_send: signed here, written by the bridge, verified there.
	var sent struct {
		ID     string `json:"id"`
		Queued bool   `json:"queued"`
	}
	if e := callTool(t, cs, "channel_send", map[string]any{"message": "hello from afar", "to": "mnt"}, &sent); e != "" || sent.Queued {
		t.Fatalf("channel_send: %s %+v", e, sent)
	}
	m, err := channel.Lookup(s.mount, "dev", sent.ID)
	if err != nil || m.From != "rem" || m.Metadata.Mode != channel.ModeMCP {
		t.Fatalf("on the mount: %+v %v", m, err)
	}
	if v := m.Verify(signing.NewVerifier(keyring.Open(tree.Root(s.backing).Keys())), "dev"); v != signing.Verified {
		t.Errorf("the post's signature on the mount: %s", v)
	}

	// A person on the mount asks; the inbox shows it once.
	ask := strings.TrimSpace(runCollab(t, map[string]string{"COLLAB_ROOT": string(s.mount)}, "", "send", "--agent", "human", "--channel", "dev", "@rem urgent: look at this").stdout)
	var box struct {
		Unread []struct {
			Priority string `json:"priority"`
			Message  struct {
				ID string `json:"id"`
			} `json:"message"`
		} `json:"unread"`
	}
	if e := callTool(t, cs, "inbox_check", nil, &box); e != "" || len(box.Unread) != 1 || box.Unread[0].Message.ID != ask || box.Unread[0].Priority != "high" {
		t.Fatalf("inbox_check: %s %+v; want %s, high", e, box, ask)
	}
	if e := callTool(t, cs, "inbox_check", nil, &box); e != "" || len(box.Unread) != 0 {
		t.Errorf("inbox_check again: %s %+v; want nothing", e, box)
	}
	var read struct {
		Messages []struct {
			ID      string `json:"id"`
			Verdict string `json:"verdict"`
		} `json:"messages"`
	}
	if e := callTool(t, cs, "channel_read", map[string]any{"since": sent.ID}, &read); e != "" || len(read.Messages) != 1 || read.Messages[0].ID != ask {
		t.Errorf("channel_read since %s: %s %+v; want %s", sent.ID, e, read, ask)
	}
	if e := callTool(t, cs, "channel_read", map[string]any{"since": "yesterday"}, nil); !strings.Contains(e, "neither a message id nor") {
		t.Errorf("channel_read since yesterday: %q", e)
	}

	// Documents: a stale if_version is refused, naming the version now.
	var doc struct {
		Version string `json:"version"`
	}
	if e := callTool(t, cs, "document_create", map[string]any{"file": "plan.md", "content": "one\n"}, &doc); e != "" {
		t.Fatal(e)
	}
	first := doc.Version
	if e := callTool(t, cs, "document_append", map[string]any{"file": "plan.md", "content": "two\n"}, &doc); e != "" {
		t.Fatal(e)
	}
	if e := callTool(t, cs, "document_write", map[string]any{"file": "plan.md", "content": "x\n", "if_version": first}, nil); !strings.Contains(e, doc.Version) {
		t.Errorf("stale document_write: %q; want the version now, %s", e, doc.Version)
	}
	if data, err := os.ReadFile(filepath.Join(s.mount.Docs("dev"), "plan.md")); err != nil || string(data) != "one\ntwo\n" {
		t.Errorf("plan.md on the mount: %q %v", data, err)
	}
	if e := callTool(t, cs, "document_create", map[string]any{"file": "plan.md", "content": "again"}, nil); !strings.Contains(e, "exists already") {
		t.Errorf("document_create of an existing file: %q", e)
	}
	if e := callTool(t, cs, "document_read", map[string]any{"file": "none.md"}, nil); !strings.Contains(e, "no document none.md") {
		t.Errorf("document_read of a missing file: %q", e)
	}

	// The task board: claimed and finished by rem, on the mount, signed.
	b, err := task.New(s.mount, "dev")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(task.NewTask{Title: "port it", By: "human"}); err != nil {
		t.Fatal(err)
	}
	var claim struct {
		Success bool `json:"success"`
	}
	if e := callTool(t, cs, "task_claim", nil, &claim); e != "" || !claim.Success {
		t.Fatalf("task_claim: %s %+v", e, claim)
	}
	if e := callTool(t, cs, "task_update", map[string]any{"id": "t1", "status": "completed", "outcome": "ported"}, nil); e != "" {
		t.Fatal(e)
	}
	if got, err := b.Get("t1"); err != nil || got.Status != task.Done || got.Outcome != "ported" {
		t.Errorf("t1 on the mount: %+v %v", got, err)
	}

	// message_status and who answer from the mount.
	var st struct {
		ID string `json:"id"`
	}
	if e := callTool(t, cs, "message_status", map[string]any{"id": sent.ID}, &st); e != "" || st.ID != sent.ID {
		t.Errorf("message_status: %s %+v", e, st)
	}
	if e := callTool(t, cs, "who", nil, nil); e != "" {
		t.Errorf("who: %s", e)
	}

	// send_and_wait: mnt answers on the mount; the reply comes back
	// through the bridge's publisher and the stream.
	answerOnMount(t, s.mount, "mnt", "rem", "what is 6*7?", "42")
	var waited struct {
		Reply *struct {
			Text string `json:"text"`
			From string `json:"from"`
		} `json:"reply"`
	}
	if e := callTool(t, cs, "send_and_wait", map[string]any{"message": "what is 6*7?", "to": "mnt", "timeout_seconds": 60}, &waited); e != "" || waited.Reply == nil || waited.Reply.Text != "42" {
		t.Errorf("send_and_wait: %s %+v", e, waited)
	}

	// What needs the tree itself is refused clearly; jobs are this host's.
	if e := callTool(t, cs, "delegate_to_worktree", map[string]any{"prompt": "x"}, nil); !strings.Contains(e, "not available") {
		t.Errorf("delegate_to_worktree: %q", e)
	}
	if e := callTool(t, cs, "job_list", nil, nil); e != "" {
		t.Errorf("job_list: %s", e)
	}
	if _, err := os.Stat(absent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mcp --remote touched %s: %v", absent, err)
	}
}

// answerOnMount answers, as agent from on the mount, the first message of
// asker in dev whose text is question, once it is there (for a minute).
func answerOnMount(t *testing.T, mount tree.Root, from, asker, question, answer string) {
	t.Helper()
	go func() {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			msgs, _, _ := channel.ReadAll(mount, "dev", channel.ReaderOptions{})
			for i := range msgs {
				if q := &msgs[i]; q.From == asker && q.Content.Text == question {
					r := channel.Message{SessionID: "dev", From: from, To: asker, Content: channel.Content{Text: answer}}
					r.SetParent(q)
					_ = (&channel.Writer{Root: mount}).Post(&r)
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

// TestRemoteSendWait: send --remote --wait prints the reply written on the
// mount (through the bridge's publisher and the stream) with the delivery
// states from the bridge's status op on stderr; with no answer it exits 3
// at its timeout.
func TestRemoteSendWait(t *testing.T) {
	s := newRemoteWatchSetup(t, "rem")
	// mnt is awake on the mount (no key: its heartbeat need not be signed).
	if err := presence.Write(s.mount, presence.Status{AgentID: "mnt", State: presence.StateAwake, Substate: "IDLE",
		Channel: "dev", Host: "mounted", Timestamp: presence.FormatTime(time.Now())}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NATS_URL": s.url, "COLLAB_KEY": s.keys["rem"], "COLLAB_STATE_DIR": filepath.Join(t.TempDir(), "state"),
		"COLLAB_REMOTE": "1", "COLLAB_ROOT": filepath.Join(t.TempDir(), "no-such-mount")}
	s.awaitBridge(t, env)
	answerOnMount(t, s.mount, "mnt", "rem", "what is 6*7?", "42")
	r := runCollab(t, env, "", "send", "--agent", "rem", "--channel", "dev", "--to", "mnt", "--wait", "--poll", "100ms", "--timeout", "60s", "what is 6*7?")
	if r.code != 0 || r.stdout != "42\n" || !strings.Contains(r.stderr, "waiting for the reply") {
		t.Fatalf("send --remote --wait: exit %d, %q, %q; want 42", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "send", "--agent", "rem", "--channel", "dev", "--to", "mnt", "--wait", "--poll", "100ms", "--timeout", "1s", "anyone?")
	if r.code != exitNothing || !strings.Contains(r.stderr, "no reply to") || !strings.Contains(r.stderr, "collab read --remote") || !strings.Contains(r.stderr, "mnt: ") {
		t.Errorf("send --remote --wait with no answer: exit %d, %q; want 3, the no-reply message and mnt's state", r.code, r.stderr)
	}
}

// awaitBridge waits until the setup's bridge answers (who --remote with
// env, as agent rem).
func (s *remoteWatchSetup) awaitBridge(t *testing.T, env map[string]string) {
	t.Helper()
	waitFor(t, func() bool { return runCollab(t, env, "", "who", "--agent", "rem").code == 0 })
}

// TestRemoteWhoCheck: who --check --remote is 0 for an agent the bridge
// sees awake, 1 for one it does not know, and 1 for a heartbeat of an
// agent with keys that is not signed (forged, as the bridge judges it).
func TestRemoteWhoCheck(t *testing.T) {
	s := newRemoteWatchSetup(t, "rem", "keyed")
	env := map[string]string{"NATS_URL": s.url, "COLLAB_REMOTE": "1", "COLLAB_STATE_DIR": filepath.Join(t.TempDir(), "state"),
		"COLLAB_ROOT": filepath.Join(t.TempDir(), "no-such-mount")}
	s.awaitBridge(t, env)
	for _, a := range []string{"mnt", "keyed"} {
		if err := presence.Write(s.mount, presence.Status{AgentID: a, State: presence.StateAwake, Substate: "IDLE",
			Channel: "dev", Host: "mounted", Timestamp: presence.FormatTime(time.Now())}); err != nil {
			t.Fatal(err)
		}
	}
	for agent, want := range map[string]int{"mnt": 0, "nobody": exitFailure, "keyed": exitFailure} {
		if r := runCollab(t, env, "", "who", "--agent", "rem", "--check", agent); r.code != want || r.stdout != "" {
			t.Errorf("who --check %s --remote: exit %d, %q; want %d and nothing printed", agent, r.code, r.stdout, want)
		}
	}
	// --stale-after is this command's, not the bridge's default.
	if err := presence.Write(s.mount, presence.Status{AgentID: "mnt", State: presence.StateAwake, Substate: "IDLE",
		Channel: "dev", Host: "mounted", Timestamp: presence.FormatTime(time.Now().Add(-10 * time.Second))}); err != nil {
		t.Fatal(err)
	}
	for stale, want := range map[string]int{"5s": exitFailure, "60s": 0} {
		if r := runCollab(t, env, "", "who", "--agent", "rem", "--check", "mnt", "--stale-after", stale); r.code != want {
			t.Errorf("who --check mnt --remote --stale-after %s (heartbeat 10 s old): exit %d; want %d", stale, r.code, want)
		}
	}
}

// TestRemoteSendWaitRefused: send --remote --wait to a mounted watcher
// whose hop limit refuses the message ends with exit 4, the refusal on
// stderr (from the bridge's status op) and the guard's notice on stdout
// (from the stream), as on the mount.
func TestRemoteSendWaitRefused(t *testing.T) {
	s := newRemoteWatchSetup(t, "rem")
	startWatcher(t, string(s.mount), "a3", "dev", nil, "--max-hops", "1", "--allow-writable-keyring")
	env := map[string]string{"NATS_URL": s.url, "COLLAB_KEY": s.keys["rem"], "COLLAB_STATE_DIR": filepath.Join(t.TempDir(), "state"),
		"COLLAB_REMOTE": "1", "COLLAB_ROOT": filepath.Join(t.TempDir(), "no-such-mount"), "COLLAB_HOPS": "1"}
	s.awaitBridge(t, env)
	r := runCollab(t, env, "", "send", "--wait", "--agent", "rem", "--channel", "dev", "--to", "a3", "--poll", "100ms", "--timeout", "2m", "go deeper")
	if r.code != exitRefused || !strings.Contains(r.stderr, "a3: refused by max-hops") ||
		!strings.Contains(r.stdout, "[collab] a3 stopped answering this thread") {
		t.Errorf("send --remote --wait refused: exit %d, stdout %q, stderr %q; want %d", r.code, r.stdout, r.stderr, exitRefused)
	}
}
