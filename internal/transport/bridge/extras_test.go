package bridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/testsupport/natstest"
)

// TestPostUnsignedExtras: of a remote agent's signed post, the bridge
// writes only what the agent signed. Fields outside the signature that
// no extras signature covers (a spoofed host, needs_input, await_reply,
// unknown members) never reach the file, which still verifies; extras
// the agent signed (as a remote client's channel.Writer does) are kept,
// and all of them go when one was added after signing.
func TestPostUnsignedExtras(t *testing.T) {
	e := newEnv(t)
	srv := natstest.Start(t, true, nil)
	serve(t, e.server(Config{}), srv.URL())
	nc := connect(t, srv.URL())

	// added returns m's JSON with the extras an attacker would add.
	added := func(t *testing.T, raw []byte) []byte {
		t.Helper()
		var top map[string]any
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Fatal(err)
		}
		md := top["metadata"].(map[string]any)
		md["host"] = "spoofed"
		md["needs_input"] = map[string]any{"job": "job-1", "options": []string{"allow"}}
		md[channel.ExtAwaitReply] = true
		top["content"].(map[string]any)["html"] = "<b>urgent</b>"
		top["priority"] = "urgent"
		out, err := json.Marshal(top)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// sealed returns a message of alice signed as a remote client signs
	// it: its host and await_reply under its extras signature.
	sealed := func(t *testing.T, text string) []byte {
		t.Helper()
		m := channel.Message{SessionID: "dev", From: "alice", Content: channel.Content{Text: text}}
		m.Metadata.Host = "laptop-1"
		m.SetAwaitReply()
		w := channel.Writer{Signer: e.keys["alice"]}
		raw, err := w.Seal(&m)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	encoded := func(t *testing.T, m channel.Message) []byte {
		t.Helper()
		raw, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}

	tests := []struct {
		name      string
		raw       []byte
		wantHost  string
		wantAwait bool
	}{
		{"signed, extras added", added(t, encoded(t, msg("alice", "dev", "v1 signature only", e.keys["alice"]))), "", false},
		{"extras signed", sealed(t, "host and await_reply signed"), "laptop-1", true},
		{"extras signed, more added", added(t, sealed(t, "host and await_reply signed, then more")), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := json.Marshal(PostRequest{Channel: "dev", Message: tt.raw})
			if err != nil {
				t.Fatal(err)
			}
			var rep PostReply
			if r := request(t, nc, OpPost, "alice", body, &rep); !r.OK {
				t.Fatalf("post: %+v", r)
			}
			data, err := os.ReadFile(filepath.Join(e.root.Channel("dev"), rep.ID+".json"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := channel.Decode(data, rep.ID+".json", "dev")
			if err != nil {
				t.Fatal(err)
			}
			if v := got.Verify(e.v, "dev"); v != signing.Verified {
				t.Errorf("the written message: %v, want verified", v)
			}
			if got.Metadata.Host != tt.wantHost || got.AwaitsReply() != tt.wantAwait {
				t.Errorf("host %q await_reply %v, want %q %v, in %s", got.Metadata.Host, got.AwaitsReply(), tt.wantHost, tt.wantAwait, data)
			}
			if _, ok := got.Metadata.Extra["needs_input"]; ok {
				t.Errorf("needs_input written: %s", data)
			}
			if got.Content.Extra != nil || got.Extra != nil {
				t.Errorf("unknown members written: content %v, top %v", got.Content.Extra, got.Extra)
			}
			if tt.wantAwait && !got.ExtrasSigned() {
				t.Errorf("the extras alice signed no longer check: %s", data)
			}
		})
	}
}
