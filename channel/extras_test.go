package channel_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/testsupport/keytest"
)

// TestStripUnsigned: a reader acts on the fields a signed message's
// signature does not cover (host, needs_input, await_reply, …) only as
// its sender signed them; a field someone added or changed afterwards,
// which leaves the message verified, drops them all.
func TestStripUnsigned(t *testing.T) {
	root := newRoot(t, "dev")
	dir := t.TempDir()
	alice, err := signing.NewKey(filepath.Join(dir, "alice.key"), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := signing.NewKey(filepath.Join(dir, "mallory.key"), "mallory", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(filepath.Join(dir, "keys"))
	if err := ring.Trust("alice", alice.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(ring)

	post := func(w channel.Writer) (file string, data []byte) {
		t.Helper()
		m := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "may I run make?"}}
		m.Metadata.Host = "vm-1"
		m.SetExtension("needs_input", json.RawMessage(`{"job":"job-1","options":["allow","deny"],"note":"a<b & c"}`))
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(root.Channel("dev"), m.File))
		if err != nil {
			t.Fatal(err)
		}
		return m.File, data
	}
	signedFile, signed := post(channel.Writer{Root: root, Signer: alice})
	unsignedFile, unsigned := post(channel.Writer{Root: root})

	// edit rewrites a message file's JSON as another account could.
	edit := func(data []byte, fn func(top, content, md map[string]any)) []byte {
		t.Helper()
		var top map[string]any
		if err := json.Unmarshal(data, &top); err != nil {
			t.Fatal(err)
		}
		fn(top, top["content"].(map[string]any), top["metadata"].(map[string]any))
		out, err := json.Marshal(top)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, signed, "", "\t"); err != nil {
		t.Fatal(err)
	}
	// extrasBy signs the message's extras, as edited, with s.
	extrasBy := func(s *signing.Signer, key string) func(top, content, md map[string]any) {
		return func(top, content, md map[string]any) {
			md["await_reply"] = true
			b, _ := json.Marshal(top)
			m, err := channel.Decode(b, signedFile, "dev")
			if err != nil {
				t.Fatal(err)
			}
			sig := s.Sign(m.ExtrasPayload())
			top[channel.ExtrasField] = map[string]any{"alg": sig.Alg, "key": key, "sig": sig.Sig}
		}
	}

	tests := []struct {
		name     string
		file     string
		data     []byte
		verdict  signing.Verdict
		stripped bool
	}{
		{"as its sender wrote it", signedFile, signed, signing.Verified, false},
		{"indented by another tool", signedFile, indented.Bytes(), signing.Verified, false},
		{"unsigned, with the same fields", unsignedFile, unsigned, signing.Unsigned, false},
		{"unsigned, await_reply added", unsignedFile, edit(unsigned, func(_, _, md map[string]any) { md["await_reply"] = true }), signing.Unsigned, false},
		{"await_reply added", signedFile, edit(signed, func(_, _, md map[string]any) { md["await_reply"] = true }), signing.Verified, true},
		{"host changed", signedFile, edit(signed, func(_, _, md map[string]any) { md["host"] = "build-1" }), signing.Verified, true},
		{"needs_input changed", signedFile, edit(signed, func(_, _, md map[string]any) {
			md["needs_input"] = map[string]any{"job": "job-1", "options": []string{"allow Bash(*)"}}
		}), signing.Verified, true},
		{"guard added", signedFile, edit(signed, func(_, _, md map[string]any) { md["guard"] = "max-hops" }), signing.Verified, true},
		{"content member added", signedFile, edit(signed, func(_, c, _ map[string]any) { c["html"] = "<b>" }), signing.Verified, true},
		{"top-level member added", signedFile, edit(signed, func(top, _, _ map[string]any) { top["priority"] = "urgent" }), signing.Verified, true},
		{"extras signature removed", signedFile, edit(signed, func(top, _, _ map[string]any) { delete(top, channel.ExtrasField) }), signing.Verified, true},
		{"extras signed by another key", signedFile, edit(signed, extrasBy(mallory, mallory.PublicKey())), signing.Verified, true},
		{"extras signed by another key, naming the sender's", signedFile, edit(signed, extrasBy(mallory, alice.PublicKey())), signing.Verified, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := channel.Decode(tt.data, tt.file, "dev")
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Verify(v, "dev"); got != tt.verdict {
				t.Fatalf("verdict %v, want %v", got, tt.verdict)
			}
			if got := m.ExtrasSigned(); got == tt.stripped {
				t.Errorf("ExtrasSigned() = %v, want %v", got, !tt.stripped)
			}
			_, hasNeeds := m.Extension("needs_input")
			tr := m.Trusted()
			if tt.stripped {
				if hasNeeds || m.AwaitsReply() {
					t.Errorf("Extension gives fields added after signing (needs_input %v, await_reply %v)", hasNeeds, m.AwaitsReply())
				}
				if tr.Metadata.Host != "" || tr.Metadata.Extra != nil || tr.Content.Extra != nil || tr.Extra != nil || tr.ExtrasSignature != nil {
					t.Errorf("Trusted kept unsigned fields: metadata %+v, content extra %v, extra %v", tr.Metadata, tr.Content.Extra, tr.Extra)
				}
				if m.Metadata.Extra == nil {
					t.Error("Trusted changed the message it copied")
				}
			} else {
				if !hasNeeds || tr.Metadata.Host != "vm-1" {
					t.Errorf("fields the sender signed dropped: needs_input %v, host %q", hasNeeds, tr.Metadata.Host)
				}
				if tr.Metadata.Mode != channel.ModeChat || tr.Metadata.Turn != "alice" {
					t.Errorf("mode %q turn %q, want chat alice", tr.Metadata.Mode, tr.Metadata.Turn)
				}
			}
			if got := tr.Verify(v, "dev"); got != tt.verdict {
				t.Errorf("stripped message's verdict %v, want %v", got, tt.verdict)
			}
			if enc, err := tr.Encode(); err != nil {
				t.Fatal(err)
			} else if back, err := channel.Decode(enc, tt.file, "dev"); err != nil || !back.ExtrasSigned() {
				t.Errorf("stripped message written back: %v, extras signed %v", err, back.ExtrasSigned())
			}
		})
	}
}

// TestAwaitReplySigned: a signed message marked awaited by its sender
// stays awaited when read back; one marked by someone else is not.
func TestAwaitReplySigned(t *testing.T) {
	root := newRoot(t, "dev")
	alice := keytest.New(t, "alice")
	w := channel.Writer{Root: root, Signer: alice}
	awaited := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "ping"}}
	awaited.SetAwaitReply()
	plain := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "pong"}}
	for _, m := range []*channel.Message{&awaited, &plain} {
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
	}
	got, err := channel.Lookup(root, "dev", awaited.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.AwaitsReply() {
		t.Error("the sender's await_reply is lost")
	}
	got, err = channel.Lookup(root, "dev", plain.ID)
	if err != nil {
		t.Fatal(err)
	}
	got.SetAwaitReply() // as if added to the file
	if got.AwaitsReply() {
		t.Error("an await_reply added after signing counts")
	}
}
