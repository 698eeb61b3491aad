package delegate_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// TestWaitTrust: a reply the trust policy refuses (one in the name of
// codex, who has a trusted key, that does not verify) is reported to
// Forged and passed over; the wait returns the real reply after it.
func TestWaitTrust(t *testing.T) {
	dir := t.TempDir()
	codex, err := signing.NewKey(filepath.Join(dir, "codex.key"), "codex", false)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := signing.NewKey(filepath.Join(dir, "stranger.key"), "codex", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(filepath.Join(dir, "keys"))
	if err := ring.Trust("codex", codex.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(ring)

	type posted struct {
		name   string
		post   func(t *testing.T, root tree.Root, q string, at time.Time) channel.Message
		forged signing.Verdict // the verdict Forged is told, when refused
	}
	signedBy := func(s *signing.Signer, from string) func(*testing.T, tree.Root, string, time.Time) channel.Message {
		return func(t *testing.T, root tree.Root, q string, at time.Time) channel.Message {
			return replyAs(t, root, "dev", s, from, q, at)
		}
	}
	unsignedCodex := posted{"unsigned in codex's name", signedBy(nil, "codex"), signing.Unsigned}
	strangerCodex := posted{"a stranger's key in codex's name", signedBy(stranger, "codex"), signing.UnknownKey}
	copied := posted{"codex's signed reply copied from another channel", func(t *testing.T, root tree.Root, q string, at time.Time) channel.Message {
		m := replyAs(t, root, "ops", codex, "codex", q, at)
		data, err := os.ReadFile(filepath.Join(root.Channel("ops"), m.File))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root.Channel("dev"), m.File), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return m
	}, signing.BadSignature}
	realCodex := posted{"codex's signed reply", signedBy(codex, "codex"), 0}
	unsignedGemini := posted{"unsigned from gemini, who has no key", signedBy(nil, "gemini"), signing.Unsigned}

	for _, c := range []struct {
		name    string
		trust   signing.Policy
		replies []posted // in order; the last one is the reply wanted
		refused int      // how many before it are refused
		verdict signing.Verdict
	}{
		{"known passes over an unsigned forgery", signing.Known, []posted{unsignedCodex, realCodex}, 1, signing.Verified},
		{"default is known", "", []posted{unsignedCodex, realCodex}, 1, signing.Verified},
		{"known passes over every kind of forgery", signing.Known, []posted{unsignedCodex, strangerCodex, copied, realCodex}, 3, signing.Verified},
		{"known takes a keyless sender at its word", signing.Known, []posted{unsignedGemini}, 0, signing.Unsigned},
		{"signed refuses a keyless sender", signing.Signed, []posted{unsignedGemini, realCodex}, 1, signing.Verified},
		{"any takes the forgery", signing.Any, []posted{unsignedCodex}, 0, signing.Unsigned},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			q := ask(t, root)
			start := time.Now()
			var want channel.Message
			var wantForged []string
			for i, p := range c.replies {
				want = p.post(t, root, q.ID, start.Add(time.Duration(i)*time.Second))
				if i < c.refused {
					wantForged = append(wantForged, want.ID+" "+p.forged.String())
				}
			}
			var forged []string
			opt := delegate.Options{Trust: c.trust, Verifier: v, NotFrom: "lead",
				Forged: func(m *channel.Message, v signing.Verdict) { forged = append(forged, m.ID+" "+v.String()) }}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			got, err := delegate.Wait(ctx, root, "dev", q.ID, opt)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != want.ID {
				t.Errorf("Wait returned %s from %s; want %s", got.ID, got.From, want.ID)
			}
			if verdict, ok := opt.Judge(&got, "dev"); verdict != c.verdict || !ok {
				t.Errorf("Judge = %v, %v; want %v, true", verdict, ok, c.verdict)
			}
			if !slices.Equal(forged, wantForged) {
				t.Errorf("Forged told of %q; want %q", forged, wantForged)
			}
		})
	}
}

// replyAs posts a reply to q in channel ch from from at time at, signed by
// s (nil: unsigned).
func replyAs(t *testing.T, root tree.Root, ch string, s *signing.Signer, from, q string, at time.Time) channel.Message {
	t.Helper()
	w := &channel.Writer{Root: root, Signer: s, Now: func() time.Time { return at }}
	m := channel.Message{SessionID: ch, From: from, Content: channel.Content{Text: "done: " + from},
		Metadata: channel.Metadata{InReplyTo: q}}
	if err := w.Post(&m); err != nil {
		t.Fatal(err)
	}
	return m
}
