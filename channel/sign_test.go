package channel_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/keytest"
)

func TestSignedMessages(t *testing.T) {
	root := tree.Root(t.TempDir())
	ring := keytest.Ring(t)
	alice := keytest.Trusted(t, ring, "alice")
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

// TestVerifyBuffers checks that the payload buffers Verify reuses carry
// nothing from one check to the next: long and short messages, good and
// forged, checked over and over from several goroutines, each keep their
// verdict.
func TestVerifyBuffers(t *testing.T) {
	ring := keytest.Ring(t)
	alice := keytest.Trusted(t, ring, "alice")
	msg := func(text string) channel.Message {
		m := channel.Message{ID: "msg-20260101-000000-alice-0001", Timestamp: "2026-01-01T00:00:00.000Z",
			SessionID: "dev", From: "alice", To: "bob", Type: "chat", Content: channel.Content{Text: text}}
		if err := m.Sign(alice); err != nil {
			t.Fatal(err)
		}
		return m
	}
	long, short := msg(strings.Repeat("long text ", 100_000)), msg("short")
	// The short text with the long one's signature: a forgery whose
	// payload is a prefix of the long one's up to the text.
	forged := short
	forged.Signature = long.Signature
	cases := []struct {
		m    channel.Message
		want signing.Verdict
	}{{long, signing.Verified}, {short, signing.Verified}, {forged, signing.BadSignature}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			v := signing.NewVerifier(ring) // first checks, not remembered ones
			for i := range 30 {
				c := cases[i%len(cases)]
				if got := c.m.Verify(v, "dev"); got != c.want {
					t.Errorf("check %d of %q…: %v, want %v", i, c.m.Content.Text[:5], got, c.want)
				}
				v = signing.NewVerifier(ring)
			}
		})
	}
	wg.Wait()
	if got, want := string(short.Payload()), string(signing.Payload(channel.KindMessage, short.ID, "dev", "alice", "bob",
		short.Timestamp, "chat", "", "", "0", "short", "", "[]")); got != want {
		t.Errorf("Payload = %q, want %q", got, want)
	}
}

// BenchmarkVerify1MB: Message.Verify of a 1 MB message, a first check (a
// new Verifier each time) and a remembered one, payload built included.
func BenchmarkVerify1MB(b *testing.B) {
	ring := keytest.Ring(b)
	alice := keytest.Trusted(b, ring, "alice")
	m := channel.Message{ID: "msg-20260101-000000-alice-0001", Timestamp: "2026-01-01T00:00:00.000Z",
		SessionID: "dev", From: "alice", To: "bob", Type: "chat", Content: channel.Content{Text: strings.Repeat("x", channel.MaxMessageSize-4<<10)}}
	if err := m.Sign(alice); err != nil {
		b.Fatal(err)
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			if m.Verify(signing.NewVerifier(ring), "dev") != signing.Verified {
				b.Fatal("not verified")
			}
		}
	})
	b.Run("remembered", func(b *testing.B) {
		v := signing.NewVerifier(ring)
		for b.Loop() {
			if m.Verify(v, "dev") != signing.Verified {
				b.Fatal("not verified")
			}
		}
	})
}

// TestVerifyBackdated: a key revoked at T does not verify a message whose
// id says it was written after T, however early its timestamp (the
// signer's word) says; a timestamp more than the clock-skew allowance
// before the id's time does not verify at all; within it, it does.
func TestVerifyBackdated(t *testing.T) {
	root := tree.Root(t.TempDir())
	alice := keytest.New(t, "alice")
	revoked := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	before, after := revoked.Add(-time.Minute), revoked.Add(30*time.Second)
	stamp := func(t time.Time) string { return t.Format(channel.TimeFormat) }
	for i, c := range []struct {
		name      string
		id        time.Time // zero: an id with no time in it
		timestamp string
		revoke    bool
		want      signing.Verdict
	}{
		{"revoked, written after, dated before", after, stamp(before), true, signing.RevokedKey},
		{"revoked, written and dated after", after, stamp(after), true, signing.RevokedKey},
		{"revoked, written and dated before", before, stamp(before), true, signing.Verified},
		{"dated beyond the allowance before its id", after, stamp(after.Add(-signing.MaxSkew - time.Second)), false, signing.BadSignature},
		{"dated within the allowance before its id", after, stamp(after.Add(-signing.MaxSkew)), false, signing.Verified},
		{"dated a day after its id (posted later)", after, stamp(after.Add(24 * time.Hour)), false, signing.Verified},
		{"no time in the id, dated before", time.Time{}, stamp(before), true, signing.Verified},
		{"no time in the id, dated after", time.Time{}, stamp(after), true, signing.RevokedKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			keys := keyring.Open(t.TempDir())
			if err := keys.Trust("alice", alice.PublicKey()); err != nil {
				t.Fatal(err)
			}
			if c.revoke {
				if err := keys.Revoke("alice", alice.PublicKey(), revoked); err != nil {
					t.Fatal(err)
				}
			}
			v := signing.NewVerifier(keys)
			m := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "ok"}}
			if c.id.IsZero() {
				// A foreign writer's id, not read from a file of that name.
				m.ID, m.Timestamp, m.Type = fmt.Sprintf("note-%d", i), c.timestamp, "chat"
				if err := m.Sign(alice); err != nil {
					t.Fatal(err)
				}
			} else {
				m.ID, m.Timestamp = channel.NewID("alice", c.id, fmt.Sprintf("%04x", i)), c.timestamp
				w := channel.Writer{Root: root, Signer: alice, Now: func() time.Time { return c.id }}
				if err := w.Post(&m); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(filepath.Join(root.Channel("dev"), m.File))
				if err != nil {
					t.Fatal(err)
				}
				if m, err = channel.Decode(data, m.File, "dev"); err != nil {
					t.Fatal(err)
				}
			}
			if got := m.Verify(v, "dev"); got != c.want {
				t.Errorf("Verify = %v, want %v (id %s, timestamp %s)", got, c.want, m.ID, m.Timestamp)
			}
		})
	}
}
