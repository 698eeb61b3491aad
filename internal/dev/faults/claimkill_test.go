package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestClaimScore proves scenario 16's score can fail: of messages to the
// agent, one answered once (signed), one never, one twice; a signed reply
// to a message the writer never sent, and a reply with the stand-in's
// answer that the agent's key did not sign.
func TestClaimScore(t *testing.T) {
	root := tree.Root(t.TempDir())
	if err := os.MkdirAll(root.Channel(chanName), 0o755); err != nil {
		t.Fatal(err)
	}
	signer, err := signing.NewKey(filepath.Join(t.TempDir(), agent+".key"), agent, false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(root.Keys())
	if err := ring.Create(); err != nil {
		t.Fatal(err)
	}
	if err := ring.Trust(agent, signer.PublicKey()); err != nil {
		t.Fatal(err)
	}
	writer := &channel.Writer{Root: root}
	bot := &channel.Writer{Root: root, Signer: signer}
	acks := make(map[string]ack)
	post := func(w *channel.Writer, from, to, text, inReplyTo string) string {
		t.Helper()
		m := &channel.Message{From: from, To: to, SessionID: chanName, Content: channel.Content{Text: text}}
		m.Metadata.InReplyTo = inReplyTo
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	ask := func(text string) string {
		id := post(writer, sender, agent, text, "")
		acks[id] = ack{ID: id, Text: text, At: time.Now()}
		return id
	}
	once := ask("once")
	post(bot, agent, sender, expectedReply(once, "once"), once)
	if v, err := claimScore(root, acks); err != nil || v.failed() || v.OK != 1 {
		t.Fatalf("one message answered once, signed: %+v, %v", v, err)
	}
	never, twice, unsigned := ask("never"), ask("twice"), ask("unsigned")
	post(bot, agent, sender, expectedReply(twice, "twice"), twice)
	post(bot, agent, sender, expectedReply(twice, "twice"), twice)
	post(bot, agent, sender, "re nothing", "msg-20260111-163315-alice-0001")
	post(writer, agent, sender, expectedReply(unsigned, "unsigned"), unsigned)

	v, err := claimScore(root, acks)
	if err != nil {
		t.Fatal(err)
	}
	if v.Messages != 4 || v.OK != 2 || v.Lost != 1 || v.Duplicated != 1 || v.Corrupt != 2 {
		t.Errorf("claimScore = %+v, want 4 messages, 2 ok, 1 lost, 1 duplicated, 2 corrupt", v)
	}
	details := strings.Join(v.Details, "\n")
	for _, s := range []string{"lost: " + never, "duplicated: " + twice, "which the writer never sent", "signature "} {
		if !strings.Contains(details, s) {
			t.Errorf("details lack %q:\n%s", s, details)
		}
	}

}
