package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/mcptest"
	"github.com/collabdev/collab/internal/workspace/inbox"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/presence"
)

// hangGuard bounds a test that must not hang; it is not a latency check.
const hangGuard = 60 * time.Second

// connect starts a server for agent claude on channel dev and returns the
// SDK's own client, connected in memory.
func connect(t *testing.T, root tree.Root) (*Server, *mcp.ClientSession) {
	t.Helper()
	return connectAs(t, root, "claude", "dev")
}

// connectAs is connect as agent in channel ch.
func connectAs(t *testing.T, root tree.Root, agent, ch string) (*Server, *mcp.ClientSession) {
	t.Helper()
	return connectWith(t, Config{Root: root, Agent: agent, Channel: ch, Host: "vm-1", Hops: 2, Poll: 10 * time.Millisecond, NoFSWake: true})
}

// connectWith is connect with this Config.
func connectWith(t *testing.T, cfg Config) (*Server, *mcp.ClientSession) {
	t.Helper()
	if viaBridge {
		cfg = bridgeConfig(t, cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return s, cs
}

// call calls a tool as the SDK's client does (mcptest.Call): the tool
// error's text, "" on success.
var call = mcptest.Call

func messages(t *testing.T, root tree.Root) []channel.Message {
	t.Helper()
	msgs, _, err := channel.ReadAll(root, "dev", channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestListTools(t *testing.T) {
	_, cs := connect(t, tree.Root(t.TempDir()))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s has no description or input schema", tool.Name)
		}
		// The identity is never an argument, nor the repository.
		schema, _ := json.Marshal(tool.InputSchema)
		for _, banned := range []string{`"agent"`, `"from"`, `"agent_id"`, `"channel"`, `"repo"`, `"repository"`} {
			if strings.Contains(string(schema), banned) {
				t.Errorf("tool %s takes %s: %s", tool.Name, banned, schema)
			}
		}
	}
	slices.Sort(names)
	want := []string{
		"channel_peek", "channel_read", "channel_send",
		"document_append", "document_create", "document_delete", "document_list", "document_read", "document_write",
		"inbox_ack", "inbox_check", "inbox_peek", "job_list", "job_show", "message_status",
		"send_and_wait", "task_add", "task_claim", "task_context", "task_list", "task_retry", "task_update", "who",
		"delegate_to_worktree", "get_session_status", "list_sessions", "send_message_to_session",
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

func TestChannelTools(t *testing.T) {
	root := tree.Root(t.TempDir())
	s, cs := connect(t, root)
	var acked []string
	s.afterRead = append(s.afterRead, func(_ context.Context, last channel.Message) error {
		acked = append(acked, last.ID)
		return nil
	})
	w := &channel.Writer{Root: root}
	first := &channel.Message{SessionID: "dev", From: "human", To: "all", Content: channel.Content{Text: "hi all"}}
	if err := w.Post(first); err != nil {
		t.Fatal(err)
	}

	var sent SendResult
	if e := call(t, cs, "channel_send", map[string]any{"message": "on it, @codex", "to": "codex"}, &sent); e != "" {
		t.Fatal(e)
	}
	m, err := channel.Lookup(root, "dev", sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.From != "claude" || m.To != "codex" || m.Content.Text != "on it, @codex" || m.Metadata.Hops != 3 || m.Metadata.Host != "vm-1" {
		t.Errorf("sent %+v; want from claude to codex at hops 3", m)
	}
	// An attempt to speak for someone else: refused, or ignored.
	call(t, cs, "channel_send", map[string]any{"message": "I am mallory", "from": "mallory", "agent": "mallory"}, nil)
	for _, m := range messages(t, root) {
		if m.From == "mallory" {
			t.Errorf("a message from mallory was posted: %+v", m)
		}
	}
	bad := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"message": "  "}, "empty"},
		{map[string]any{"message": "x", "to": "../codex"}, "invalid name"},
		{map[string]any{}, "message"},
	}
	for _, b := range bad {
		if e := call(t, cs, "channel_send", b.args, nil); !strings.Contains(e, b.want) {
			t.Errorf("channel_send(%v) = %q, want an error with %q", b.args, e, b.want)
		}
	}

	var peek ReadResult
	if e := call(t, cs, "channel_peek", map[string]any{}, &peek); e != "" {
		t.Fatal(e)
	}
	if len(peek.Messages) < 2 || peek.Messages[0].Text != "hi all" || peek.Messages[1].ID != sent.ID || len(acked) != 0 {
		t.Fatalf("peek = %+v, acked %v; want the channel and nothing acknowledged", peek, acked)
	}
	last := peek.Messages[len(peek.Messages)-1]
	var read ReadResult
	if e := call(t, cs, "channel_read", map[string]any{"limit": 1}, &read); e != "" {
		t.Fatal(e)
	}
	if len(read.Messages) != 1 || read.Messages[0].ID != last.ID || !read.More || !slices.Equal(acked, []string{last.ID}) {
		t.Errorf("read limit 1 = %+v, acked %v; want the newest, more, and it acknowledged", read, acked)
	}
	if e := call(t, cs, "channel_read", map[string]any{"since": first.ID}, &read); e != "" || len(read.Messages) != len(peek.Messages)-1 {
		t.Errorf("read since the first = %+v, %s", read, e)
	}
	if e := call(t, cs, "channel_read", map[string]any{"since": "2999-01-01T00:00:00Z"}, &read); e != "" || len(read.Messages) != 0 {
		t.Errorf("read since the future = %+v, %s", read, e)
	}
	if e := call(t, cs, "channel_read", map[string]any{"since": "yesterday"}, nil); !strings.Contains(e, "neither") {
		t.Errorf("read since junk = %q", e)
	}
	if e := call(t, cs, "channel_peek", map[string]any{"limit": -1}, nil); !strings.Contains(e, "negative") {
		t.Errorf("peek limit -1 = %q", e)
	}
}

func TestWho(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	if err := presence.Write(root, presence.Status{AgentID: "codex", State: presence.StateAwake, Substate: presence.SubIdle, Host: "vm-2", Channel: "dev"}); err != nil {
		t.Fatal(err)
	}
	if err := presence.Write(root, presence.Status{AgentID: "gemini", State: presence.StateOffline, Host: "vm-3"}); err != nil {
		t.Fatal(err)
	}
	var who WhoResult
	if e := call(t, cs, "who", nil, &who); e != "" {
		t.Fatal(e)
	}
	got := map[string]string{}
	for _, a := range who.Agents {
		got[a.Agent] = a.State
	}
	if got["codex"] != presence.AwakeIdle || got["gemini"] != presence.Offline || len(got) != 2 {
		t.Errorf("who = %+v", who)
	}
}

func TestTaskTools(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	b, _ := task.New(root, "dev")
	for _, nt := range []task.NewTask{{Title: "one", By: "lead"}, {Title: "two", By: "lead"}, {Title: "three", Depends: []string{"t1"}, By: "lead"}} {
		if _, err := b.Add(nt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Claim("t2", "codex"); err != nil {
		t.Fatal(err)
	}

	var list TaskListResult
	if e := call(t, cs, "task_list", map[string]any{"status": []string{"ready"}}, &list); e != "" || len(list.Tasks) != 1 || list.Tasks[0].ID != "t1" {
		t.Errorf("task_list ready = %+v, %s; want t1", list, e)
	}
	if e := call(t, cs, "task_list", nil, &list); e != "" || len(list.Tasks) != 3 {
		t.Errorf("task_list = %+v, %s; want 3 tasks", list, e)
	}
	if e := call(t, cs, "task_list", map[string]any{"status": []string{"bogus"}}, nil); !strings.Contains(e, "not one of") {
		t.Errorf("task_list bogus = %q", e)
	}

	var claim TaskClaimResult
	if e := call(t, cs, "task_claim", map[string]any{"task_id": "t2"}, &claim); e != "" || claim.Success || claim.AlreadyClaimedBy != "codex" {
		t.Errorf("task_claim t2 = %+v, %s; want already claimed by codex", claim, e)
	}
	if e := call(t, cs, "task_claim", nil, &claim); e != "" || !claim.Success || claim.Task.ID != "t1" || claim.Task.Owner != "claude" {
		t.Errorf("task_claim next = %+v, %s; want t1 for claude", claim, e)
	}
	if e := call(t, cs, "task_claim", map[string]any{"task_id": "t3"}, nil); !strings.Contains(e, "waits for t1") {
		t.Errorf("task_claim t3 = %q; want blocked by t1", e)
	}

	var tk task.Task
	if e := call(t, cs, "task_update", map[string]any{"id": "t1", "status": "in_progress", "summary": "half"}, &tk); e != "" || tk.Summary != "half" {
		t.Errorf("checkpoint = %+v, %s", tk, e)
	}
	if e := call(t, cs, "task_update", map[string]any{"id": "t2", "status": "completed", "outcome": "x"}, nil); !strings.Contains(e, "claimed by codex") {
		t.Errorf("completing codex's task = %q", e)
	}
	if e := call(t, cs, "task_update", map[string]any{"id": "t1", "status": "paused"}, nil); !strings.Contains(e, "not one of") {
		t.Errorf("bad status = %q", e)
	}
	if e := call(t, cs, "task_update", map[string]any{"id": "t1", "status": "completed", "outcome": "done right"}, &tk); e != "" || tk.Status != task.Done {
		t.Errorf("complete = %+v, %s", tk, e)
	}
	if e := call(t, cs, "task_claim", map[string]any{"task_id": "t3"}, &claim); e != "" || !claim.Success {
		t.Errorf("task_claim t3 after t1 = %+v, %s", claim, e)
	}
	if e := call(t, cs, "task_update", map[string]any{"id": "t3", "status": "failed", "error": "no"}, &tk); e != "" || tk.Status != task.Failed {
		t.Errorf("fail = %+v, %s", tk, e)
	}
}

// TestSendAndWait runs in a synctest bubble: the one-second timeout passes
// on the bubble's clock, at once.
func TestSendAndWait(t *testing.T) {
	synctest.Test(t, testSendAndWait)
}

func testSendAndWait(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	// codex answers the first message claude sends it.
	go func() {
		deadline := time.Now().Add(hangGuard)
		for time.Now().Before(deadline) {
			for _, m := range messages(t, root) {
				if m.From == "claude" && m.To == "codex" {
					w := &channel.Writer{Root: root}
					w.Post(&channel.Message{SessionID: "dev", From: "codex", To: "claude", Content: channel.Content{Text: "tests pass"},
						Metadata: channel.Metadata{InReplyTo: m.ID}})
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var res SendAndWaitResult
	if e := call(t, cs, "send_and_wait", map[string]any{"message": "run the tests", "to": "codex"}, &res); e != "" {
		t.Fatal(e)
	}
	if res.TimedOut || res.Reply == nil || res.Reply.Text != "tests pass" || res.Reply.From != "codex" || res.Reply.InReplyTo != res.ID {
		t.Errorf("send_and_wait = %+v", res)
	}
	req, err := channel.Lookup(root, "dev", res.ID)
	if err != nil || string(req.Metadata.Extra["await_reply"]) != "true" || req.Metadata.Hops != 3 {
		t.Errorf("request = %+v, %v", req.Metadata, err)
	}

	res = SendAndWaitResult{}
	if e := call(t, cs, "send_and_wait", map[string]any{"message": "anyone?", "to": "gemini", "timeout_seconds": 1}, &res); e != "" || !res.TimedOut || res.Reply != nil {
		t.Errorf("send_and_wait with no answer = %+v, %s; want timed_out", res, e)
	}
	if e := call(t, cs, "send_and_wait", map[string]any{"message": "x", "to": "all"}, nil); !strings.Contains(e, "name the agent") {
		t.Errorf("send_and_wait to all = %q", e)
	}
}

func TestNewRefusesBadIdentity(t *testing.T) {
	for _, c := range []Config{{Agent: "../x", Channel: "dev"}, {Agent: "claude", Channel: "a/b"}, {Channel: "dev"}} {
		c.Root = tree.Root(t.TempDir())
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

func TestInboxTools(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	// A second apart: messages posted within one millisecond would be in
	// no fixed order (docs/protocol.md#messages), and ack until an id covers what sorts
	// before it.
	clock := time.Now().Add(-time.Hour)
	w := &channel.Writer{Root: root, Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	post := func(from, to, text string) *channel.Message {
		t.Helper()
		m := &channel.Message{SessionID: "dev", From: from, To: to, Content: channel.Content{Text: text}}
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	unread := func(tool string) []InboxItem {
		t.Helper()
		var res InboxResult
		if e := call(t, cs, tool, nil, &res); e != "" {
			t.Fatalf("%s: %s", tool, e)
		}
		if res.Channel != "dev" {
			t.Errorf("%s channel = %q", tool, res.Channel)
		}
		return res.Unread
	}
	ids := func(items []InboxItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Message.ID)
		}
		return out
	}

	a := post("human", "claude", "please look at the auth module")
	post("human", "codex", "not for claude")
	b := post("codex", "all", "@claude @gemini urgent: the build is blocked")
	if got := unread("inbox_peek"); !slices.Equal(ids(got), []string{b.ID, a.ID}) || got[1].Priority != "normal" || got[0].Priority != "high" || !got[1].Message.Mentioned {
		t.Fatalf("inbox_peek = %+v; want b (high), then a (normal)", got)
	}
	// Peek changes nothing; check shows the same and marks them read.
	if got := unread("inbox_check"); !slices.Equal(ids(got), []string{b.ID, a.ID}) {
		t.Errorf("inbox_check = %v", ids(got))
	}
	if got := unread("inbox_check"); len(got) != 0 {
		t.Errorf("inbox_check again = %v; want nothing", ids(got))
	}

	// inbox_ack up to a message id: that one and the earlier ones.
	c := post("human", "claude", "one")
	d := post("human", "claude", "two")
	var ack InboxAckResult
	if e := call(t, cs, "inbox_ack", map[string]any{"until": c.ID}, &ack); e != "" || ack.Acknowledged != 1 {
		t.Errorf("inbox_ack until c = %+v, %s; want 1", ack, e)
	}
	if got := unread("inbox_peek"); !slices.Equal(ids(got), []string{d.ID}) {
		t.Errorf("after ack until c: %v, want only d", ids(got))
	}
	// Up to a time.
	if e := call(t, cs, "inbox_ack", map[string]any{"until": "2999-01-01T00:00:00Z"}, &ack); e != "" || ack.Acknowledged != 1 {
		t.Errorf("inbox_ack until the future = %+v, %s; want 1", ack, e)
	}
	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"until": "yesterday"}, "neither a message id"},
		{map[string]any{"until": "msg-20260101-000000-nobody-0000"}, "no message"},
		{map[string]any{"until": ""}, "until is required"},
		{map[string]any{}, "until"},
	} {
		if e := call(t, cs, "inbox_ack", bad.args, nil); !strings.Contains(e, bad.want) {
			t.Errorf("inbox_ack(%v) = %q, want an error with %q", bad.args, e, bad.want)
		}
	}

	// channel_peek leaves the inbox alone; channel_read marks read what
	// it returned.
	e1 := post("human", "claude", "three")
	if e := call(t, cs, "channel_peek", map[string]any{"since": d.ID}, nil); e != "" {
		t.Fatal(e)
	}
	if got := unread("inbox_peek"); !slices.Equal(ids(got), []string{e1.ID}) {
		t.Errorf("after channel_peek: %v, want e1 unread", ids(got))
	}
	var read ReadResult
	if e := call(t, cs, "channel_read", map[string]any{"since": d.ID}, &read); e != "" || len(read.Messages) != 1 {
		t.Fatalf("channel_read since %s = %+v, %s; all %+v", d.ID, read, e, messages(t, root))
	}
	if got := unread("inbox_peek"); len(got) != 0 {
		t.Errorf("after channel_read: %v unread, want none", ids(got))
	}
	// Another agent's inbox is untouched by claude's reads.
	if got, err := inboxOf(root, "codex"); err != nil || len(got) != 1 {
		t.Errorf("codex's inbox = %d, %v; want its one message", len(got), err)
	}
}

func inboxOf(root tree.Root, agent string) ([]inbox.Item, error) {
	b, err := inbox.New(root, agent, inbox.Options{Channels: []string{"dev"}})
	if err != nil {
		return nil, err
	}
	return b.Peek()
}

func TestDocumentTools(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)

	var list DocListResult
	if e := call(t, cs, "document_list", nil, &list); e != "" || len(list.Documents) != 0 || list.Channel != "dev" {
		t.Errorf("document_list on nothing = %+v, %s", list, e)
	}
	if e := call(t, cs, "document_read", nil, nil); !strings.Contains(e, "no document notes.md") {
		t.Errorf("document_read of a missing entry point = %q", e)
	}

	var w DocWriteResult
	if e := call(t, cs, "document_create", map[string]any{"file": "notes.md", "content": "# Notes\n"}, &w); e != "" || w.File != "notes.md" {
		t.Fatalf("document_create = %+v, %s", w, e)
	}
	if e := call(t, cs, "document_create", map[string]any{"file": "notes.md", "content": "again"}, nil); !strings.Contains(e, "exists already") {
		t.Errorf("document_create of an existing file = %q", e)
	}
	if e := call(t, cs, "document_append", map[string]any{"content": "- auth: token not checked\n"}, &w); e != "" {
		t.Fatal(e)
	}
	var doc Document
	if e := call(t, cs, "document_read", nil, &doc); e != "" || doc.File != "notes.md" || doc.Content != "# Notes\n- auth: token not checked\n" || doc.Version != w.Version {
		t.Fatalf("document_read = %+v, %s; want both lines at version %s", doc, e, w.Version)
	}

	// A write based on that version goes through; a second one based on
	// the same (now old) version is refused, naming the current one.
	if e := call(t, cs, "document_write", map[string]any{"content": "# Notes\n(rewritten)\n", "if_version": doc.Version}, &w); e != "" {
		t.Fatal(e)
	}
	e := call(t, cs, "document_write", map[string]any{"content": "# Mine\n", "if_version": doc.Version}, nil)
	if !strings.Contains(e, "conflict") || !strings.Contains(e, w.Version) {
		t.Errorf("stale document_write = %q; want a conflict naming version %s", e, w.Version)
	}
	if e := call(t, cs, "document_read", map[string]any{"file": "notes.md"}, &doc); e != "" || doc.Content != "# Notes\n(rewritten)\n" {
		t.Errorf("after the conflict: %+v, %s", doc, e)
	}
	// Without if_version a write replaces; in a subfolder too.
	if e := call(t, cs, "document_write", map[string]any{"file": "findings/auth.md", "content": "token\n"}, &w); e != "" {
		t.Fatal(e)
	}
	if e := call(t, cs, "document_list", nil, &list); e != "" || len(list.Documents) != 2 || list.Documents[0].File != "findings/auth.md" || list.Documents[1].File != "notes.md" {
		t.Errorf("document_list = %+v, %s", list, e)
	}

	// Paths that leave the folder, and other bad input, are tool errors
	// and touch nothing.
	outside := filepath.Join(string(root), "outside.md")
	for _, bad := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"document_read", map[string]any{"file": "../../../etc/passwd"}, "invalid document path"},
		{"document_write", map[string]any{"file": "../outside.md", "content": "x"}, "invalid document path"},
		{"document_write", map[string]any{"file": outside, "content": "x"}, "invalid document path"},
		{"document_append", map[string]any{"file": ".hidden", "content": "x"}, "invalid document path"},
		{"document_create", map[string]any{"file": "a/../../b.md", "content": "x"}, "invalid document path"},
		{"document_create", map[string]any{"content": "x"}, "file"},
		{"document_append", map[string]any{"content": ""}, "empty"},
		{"document_write", map[string]any{"file": "x.md"}, "content"},
	} {
		if e := call(t, cs, bad.tool, bad.args, nil); !strings.Contains(e, bad.want) {
			t.Errorf("%s(%v) = %q, want an error with %q", bad.tool, bad.args, e, bad.want)
		}
	}
	if _, err := os.Stat(outside); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a document was written outside the folder: %v", err)
	}
	// A symbolic link out of the folder is refused too.
	if err := os.Symlink(string(root), filepath.Join(root.Docs("dev"), "escape")); err != nil {
		t.Fatal(err)
	}
	if e := call(t, cs, "document_write", map[string]any{"file": "escape/outside.md", "content": "x"}, nil); e == "" {
		t.Error("a write through a symbolic link out of the folder succeeded")
	}
	if _, err := os.Stat(outside); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a document was written through the link: %v", err)
	}
}

// TestPublishFailureLogged: a message whose announcement fails is still
// sent (the file is the truth), and the warning names it under the log
// key every package uses for a message id.
func TestPublishFailureLogged(t *testing.T) {
	root := tree.Root(t.TempDir())
	var log strings.Builder
	s, err := New(Config{Root: root, Agent: "claude", Channel: "dev", Hops: -1,
		Logger:  slog.New(slog.NewJSONHandler(&log, nil)),
		Publish: func(context.Context, *channel.Message) error { return errors.New("broker down") }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.channelSend(context.Background(), SendArgs{Message: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := channel.Lookup(root, "dev", res.ID)
	if err != nil || m.Metadata.Mode != channel.ModeMCP {
		t.Errorf("sent %+v, %v; want a file with mode %q", m.Metadata, err, channel.ModeMCP)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(log.String()), &rec); err != nil {
		t.Fatalf("log %q: %v", log.String(), err)
	}
	if rec["msg_id"] != res.ID || rec["err"] != "broker down" {
		t.Errorf("log record %v; want msg_id %s and err", rec, res.ID)
	}
}

// TestPeekEmptyChannel: a channel with no messages yet (no folder) reads
// as an empty list, not an error.
func TestPeekEmptyChannel(t *testing.T) {
	_, cs := connect(t, tree.Root(t.TempDir()))
	for _, tool := range []string{"channel_peek", "channel_read"} {
		var got ReadResult
		if e := call(t, cs, tool, map[string]any{}, &got); e != "" || got.Messages == nil || len(got.Messages) != 0 {
			t.Errorf("%s on an empty channel = %+v, %q; want an empty list", tool, got, e)
		}
	}
}
