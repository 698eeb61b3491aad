package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// post writes a message from agent to ch, as another process would.
func post(t *testing.T, root tree.Root, ch, from, to, text string) *channel.Message {
	t.Helper()
	m := &channel.Message{SessionID: ch, From: from, To: to, Type: "chat", Content: channel.Content{Text: text}}
	if err := (&channel.Writer{Root: root}).Post(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// postAt is post with the message named and dated at: tests that need
// two messages in a known order post them a second apart (ids within one
// second sort by their random suffix).
func postAt(t *testing.T, root tree.Root, ch, from, to, text string, at time.Time) *channel.Message {
	t.Helper()
	m := &channel.Message{SessionID: ch, From: from, To: to, Type: "chat", Content: channel.Content{Text: text}}
	if err := (&channel.Writer{Root: root, Now: func() time.Time { return at }}).Post(m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAPIChannels(t *testing.T) {
	ts := newTestServer(t, Config{})
	code, body := ts.do(t, "GET", "/api/channels", "")
	if code != 200 || strings.TrimSpace(body) != `{"channels":[]}` {
		t.Fatalf("empty tree: %d %s", code, body)
	}
	if err := os.Mkdir(ts.root.Channel("quiet"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A second apart: ids within one second sort by their random suffix,
	// so two posted at once would leave either one the newest.
	start := time.Now().Add(-time.Hour)
	var m *channel.Message
	for i, text := range []string{"one", "two"} {
		m = &channel.Message{SessionID: "dev", From: "bob", Type: "chat", Content: channel.Content{Text: text}}
		w := channel.Writer{Root: ts.root, Now: func() time.Time { return start.Add(time.Duration(i) * time.Second) }}
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
	}
	code, body = ts.do(t, "GET", "/api/channels", "")
	var got struct{ Channels []ChannelView }
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if len(got.Channels) != 2 || got.Channels[0].Name != "dev" || got.Channels[0].Newest != m.ID || got.Channels[1].Name != "quiet" || got.Channels[1].Newest != "" {
		t.Errorf("channels %+v", got.Channels)
	}
}

func TestAPIMessagesPages(t *testing.T) {
	ts := newTestServer(t, Config{})
	want := map[string]bool{}
	for i := range 5 {
		want[post(t, ts.root, "dev", "bob", "all", fmt.Sprint("m", i)).ID] = true
	}
	seen := map[string]bool{}
	before := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("more pages than messages")
		}
		q := "/api/channels/dev/messages?limit=2"
		if before != "" {
			q += "&before=" + before
		}
		code, body := ts.do(t, "GET", q, "")
		var p Page
		if err := json.Unmarshal([]byte(body), &p); code != 200 || err != nil {
			t.Fatalf("%d %s %v", code, body, err)
		}
		for _, m := range p.Messages {
			if seen[m.ID] || !want[m.ID] || m.Verdict != "unsigned" || m.Channel != "dev" || m.Delivery != nil {
				t.Errorf("message %+v", m)
			}
			seen[m.ID] = true
		}
		if p.Before == "" {
			break
		}
		before = p.Before
	}
	if len(seen) != 5 {
		t.Errorf("pages held %d of 5 messages", len(seen))
	}
	for _, q := range []string{"limit=0", "limit=201", "limit=x", "before=nope", "before=../x"} {
		code, body := ts.do(t, "GET", "/api/channels/dev/messages?"+q, "")
		if code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, code, body)
		}
		jsonError(t, body)
	}
	if code, body := ts.do(t, "GET", "/api/channels/Bad!/messages", ""); code != http.StatusBadRequest {
		t.Errorf("bad channel name: %d %s", code, body)
	}
	// A channel that does not exist is not found (service.Messages.Read),
	// the error naming the channels there are.
	if code, body := ts.do(t, "GET", "/api/channels/none/messages", ""); code != http.StatusNotFound || !strings.Contains(body, "(the channels: dev)") {
		t.Errorf("missing channel: %d %s", code, body)
	}
}

func TestAPIPostSigned(t *testing.T) {
	keys := t.TempDir()
	alice, err := signing.NewKey(filepath.Join(keys, "alice.key"), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(filepath.Join(keys, "ring"))
	if err := ring.Trust("alice", alice.PublicKey()); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, Config{Signer: alice, Verifier: signing.NewVerifier(ring)})
	parent := post(t, ts.root, "dev", "bob", "alice", "question?")
	code, body := ts.do(t, "POST", "/api/channels/dev/messages",
		fmt.Sprintf(`{"text":"<script>alert(1)</script> answer","to":"bob","reply_to":%q}`, parent.ID),
		"Origin", ts.ts.URL, "Sec-Fetch-Site", "same-origin")
	var v MessageView
	if err := json.Unmarshal([]byte(body), &v); code != http.StatusCreated || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if v.From != "alice" || v.To != "bob" || v.InReplyTo != parent.ID || v.Verdict != "verified" || v.Delivery == nil || v.Delivery.Addressees[0].Agent != "bob" {
		t.Errorf("posted %+v", v)
	}
	m, err := channel.Lookup(ts.root, "dev", v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Content.Text != "<script>alert(1)</script> answer" || m.Signature == nil || m.Verify(signing.NewVerifier(ring), "dev") != signing.Verified {
		t.Errorf("file %+v", m)
	}
	if strings.Contains(body, "<script>") {
		t.Errorf("JSON carries raw HTML: %s", body)
	}
	code, body = ts.do(t, "GET", "/api/status/"+v.ID, "")
	if code != 200 || !strings.Contains(body, `"agent":"bob"`) {
		t.Errorf("status: %d %s", code, body)
	}
}

func TestAPIPostRefusals(t *testing.T) {
	ts := newTestServer(t, Config{})
	for body, want := range map[string]string{
		`{"text":"  "}`:                           "the message text is empty",
		`{"text":"hi","to":"no body"}`:            "recipient",
		`{"text":"hi","reply_to":"nope"}`:         `reply_to "nope" is not a message id`,
		`{"text":"hi","from":"bob"}`:              "unknown field",
		`{"text":`:                                "bad JSON body",
		`{"text":"hi","to":"x@"}`:                 "to:",
		`{"text":"hi","to":"../etc"}`:             "recipient",
		`{"text":"hi","reply_to":"msg-1-bob-ab"}`: "is not a message id",
	} {
		code, got := ts.do(t, "POST", "/api/channels/dev/messages", body)
		if code != http.StatusBadRequest || !strings.Contains(jsonError(t, got), want) {
			t.Errorf("%s: %d %s, want 400 %q", body, code, got, want)
		}
	}
	code, got := ts.do(t, "POST", "/api/channels/Bad!/messages", `{"text":"hi"}`)
	if code != http.StatusBadRequest {
		t.Errorf("bad channel: %d %s", code, got)
	}
	big := `{"text":"` + strings.Repeat("a", channel.MaxMessageSize-100) + `"}`
	if code, got := ts.do(t, "POST", "/api/channels/dev/messages", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("too large a message: %d %.200s", code, got)
	}
	if _, err := os.Stat(ts.root.Channel("dev")); err == nil {
		if es, _ := os.ReadDir(ts.root.Channel("dev")); len(es) > 0 {
			t.Errorf("a refused post wrote %v", es)
		}
	}
}

func TestAPIStatusAndWho(t *testing.T) {
	ts := newTestServer(t, Config{})
	for path, want := range map[string]int{
		"/api/status/nope":                                     http.StatusBadRequest,
		"/api/status/msg-20260101-000000-bob-abcd":             http.StatusNotFound,
		"/api/status/msg-20260101-000000-bob-abcd?channel=dev": http.StatusNotFound,
		"/api/status/msg-20260101-000000-bob-abcd?channel=B!":  http.StatusBadRequest,
	} {
		if code, body := ts.do(t, "GET", path, ""); code != want {
			t.Errorf("%s: %d %s", path, code, body)
		} else {
			jsonError(t, body)
		}
	}
	if code, body := ts.do(t, "GET", "/api/who", ""); code != 200 || strings.TrimSpace(body) != `{"agents":[]}` {
		t.Errorf("who with no presence: %d %s", code, body)
	}
	if err := presence.Write(ts.root, presence.Status{AgentID: "bob", State: presence.StateAwake, Substate: presence.SubIdle, Channel: "dev", Host: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	code, body := ts.do(t, "GET", "/api/who", "")
	var got struct{ Agents []AgentView }
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if len(got.Agents) != 1 || got.Agents[0].Agent != "bob" || got.Agents[0].Host != "elsewhere" || got.Agents[0].Verdict != "unsigned" || got.Agents[0].Channels[0] != "dev" {
		t.Errorf("who %+v", got.Agents)
	}
}
