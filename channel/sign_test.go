package channel_test

import (
	"os"
	"path/filepath"
	"testing"

	"collab/channel"
	"collab/internal/identity/keyring"
	"collab/internal/identity/signing"
	"collab/internal/plumbing/tree"
)

func TestSignedMessages(t *testing.T) {
	root := tree.Root(t.TempDir())
	alice, err := signing.NewKey(filepath.Join(t.TempDir(), "alice.key"), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	if err := ring.Trust("alice", alice.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(ring)
	w := channel.Writer{Root: root, Signer: alice}
	m := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "allow"}}
	m.Metadata.InReplyTo = "msg-20260101-000000-bob-0001"
	if err := w.Post(&m); err != nil {
		t.Fatal(err)
	}
	if err := w.Post(&channel.Message{SessionID: "dev", From: "mallory", Content: channel.Content{Text: "x"}}); err == nil {
		t.Error("alice's key signed a message from mallory")
	}
	data, err := os.ReadFile(filepath.Join(root.Channel("dev"), m.File))
	if err != nil {
		t.Fatal(err)
	}
	read := func(ch, file string, data []byte) channel.Message {
		t.Helper()
		got, err := channel.Decode(data, file, ch)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := read("dev", m.File, data); got.Verify(v, "dev") != signing.Verified {
		t.Fatalf("the posted message: %v, want verified", got.Verify(v, "dev"))
	}
	other := "msg-20260101-000000-alice-0002.json"
	for _, c := range []struct {
		name     string
		ch, file string
		edit     func(*channel.Message)
		want     signing.Verdict
	}{
		{"copied into another channel", "ops", m.File, nil, signing.BadSignature},
		{"copied under another name", "dev", other, nil, signing.BadSignature},
		{"text changed", "dev", m.File, func(m *channel.Message) { m.Content.Text = "deny" }, signing.BadSignature},
		{"answer moved to another question", "dev", m.File, func(m *channel.Message) { m.Metadata.InReplyTo = "msg-x" }, signing.BadSignature},
		{"hops changed", "dev", m.File, func(m *channel.Message) { m.Metadata.Hops = 9 }, signing.BadSignature},
		{"signature removed", "dev", m.File, func(m *channel.Message) { m.Signature = nil }, signing.Unsigned},
		{"sender changed", "dev", m.File, func(m *channel.Message) { m.From = "bob" }, signing.UnknownKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := read(c.ch, c.file, data)
			if c.edit != nil {
				c.edit(&got)
				b, err := got.Encode()
				if err != nil {
					t.Fatal(err)
				}
				got = read(c.ch, c.file, b) // as a reader would find it
			}
			if v := got.Verify(v, c.ch); v != c.want {
				t.Errorf("Verify = %v, want %v", v, c.want)
			}
		})
	}
}
