package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestCheck proves the checker can fail: on a hand-made channel with one
// message answered once, one never, one twice and one wrongly, it must
// count exactly that.
func TestCheck(t *testing.T) {
	root := tree.Root(t.TempDir())
	t0 := time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)
	clock := t0
	w := &channel.Writer{Root: root, Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	post := func(t *testing.T, m channel.Message) channel.Message {
		t.Helper()
		m.SessionID = chanName
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	acks := make(map[string]ack)
	ask := func(t *testing.T, text string) ack {
		t.Helper()
		m := post(t, channel.Message{From: sender, To: agent, Content: channel.Content{Text: text}})
		a := ack{ID: m.ID, Text: text, At: m.Time()}
		acks[a.ID] = a
		return a
	}
	answer := func(t *testing.T, a ack, text string) {
		t.Helper()
		post(t, channel.Message{From: agent, To: sender, Content: channel.Content{Text: text},
			Metadata: channel.Metadata{InReplyTo: a.ID, Hops: 1}})
	}
	ok, lost, dup, wrong := ask(t, "one"), ask(t, "two"), ask(t, "three"), ask(t, "four")
	answer(t, ok, expectedReply(ok.ID, ok.Text))
	answer(t, dup, expectedReply(dup.ID, dup.Text))
	answer(t, dup, expectedReply(dup.ID, dup.Text))
	answer(t, wrong, expectedReply(wrong.ID, "something else"))
	_ = lost
	// Not replies to acked messages, so not counted: a message of the
	// agent's own, another agent's reply, and a reply to a foreign file.
	post(t, channel.Message{From: agent, Content: channel.Content{Text: "hello"}})
	post(t, channel.Message{From: "other", Content: channel.Content{Text: "re"}, Metadata: channel.Metadata{InReplyTo: ok.ID}})
	post(t, channel.Message{From: agent, Content: channel.Content{Text: "re"}, Metadata: channel.Metadata{InReplyTo: "msg-20260111-000000-x-0000"}})
	// A question asked mid-run is not a reply: "one" is answered once.
	post(t, channel.Message{From: agent, To: sender, Type: channel.TypeQuestion, Content: channel.Content{Text: "may I?"}, Metadata: channel.Metadata{InReplyTo: ok.ID, Hops: 1}})

	dir := root.Channel(chanName)
	v, err := check(dir, chanName, agent, acks)
	if err != nil {
		t.Fatal(err)
	}
	want := verdict{Messages: 4, OK: 2, Lost: 1, Duplicated: 1, Corrupt: 1}
	if v.Messages != want.Messages || v.OK != want.OK || v.Lost != want.Lost || v.Duplicated != want.Duplicated || v.Corrupt != want.Corrupt {
		t.Errorf("got %+v, want %+v", v, want)
	}
	if !v.failed() {
		t.Error("failed() = false on a run with a loss")
	}
	if v.MaxLatency < time.Second || v.MaxLatency > 10*time.Second {
		t.Errorf("max latency %v, want the seconds between the hand-made message and reply times", v.MaxLatency)
	}
	if len(v.Others) != 1 {
		t.Errorf("others = %v, want the one reply to a foreign id", v.Others)
	}

	// A file named as the agent's that does not parse is corrupt.
	bad := channel.NewID(agent, t0, "dead") + ".json"
	if err := os.WriteFile(filepath.Join(dir, bad), []byte("{not json"), 0o666); err != nil {
		t.Fatal(err)
	}
	if v, err := check(dir, chanName, agent, acks); err != nil || v.Corrupt != 2 {
		t.Errorf("with a malformed reply: corrupt = %d, err %v; want 2", v.Corrupt, err)
	}

	// The same channel with only the good message acked passes.
	if v, err := check(dir, chanName, agent, map[string]ack{ok.ID: ok}); err != nil || v.Lost+v.Duplicated != 0 || v.OK != 1 {
		t.Errorf("only the good message: %+v, %v", v, err)
	}
}

func TestExpectedReply(t *testing.T) {
	tests := []struct {
		name     string
		id, text string
		other    string
	}{
		{"text differs", "msg-20260111-163315-me-4c78", "hello", "hello!"},
		{"empty text", "msg-20260111-163315-me-4c78", "", " "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, again := expectedReply(tc.id, tc.text), expectedReply(tc.id, tc.text); got != again {
				t.Errorf("not deterministic: %q, %q", got, again)
			}
			if expectedReply(tc.id, tc.text) == expectedReply(tc.id, tc.other) {
				t.Errorf("%q and %q give the same reply", tc.text, tc.other)
			}
		})
	}
}

// TestStandin runs the stand-in as the watcher would and checks that its
// answer is the one the checker expects.
func TestStandin(t *testing.T) {
	root := tree.Root(t.TempDir())
	m := channel.Message{SessionID: chanName, From: sender, To: agent, Content: channel.Content{Text: "héllo\nworld"}}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"COLLAB_ROOT": string(root), "COLLAB_CHANNEL": chanName, "COLLAB_MESSAGE_ID": m.ID}
	var stdout, stderr strings.Builder
	code := standin([]string{"--jitter", "1ms"}, func(k string) string { return vars[k] }, strings.NewReader("the prompt"), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got, want := strings.TrimSpace(stdout.String()), expectedReply(m.ID, m.Content.Text); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
