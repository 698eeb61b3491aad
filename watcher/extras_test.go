package watcher_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestAwaitReplyAddedAfterSigning: the watcher passes over a reply to a
// message of its agent only when the agent itself marked that message
// awaited (send --wait) under its signature; an await_reply someone added
// to the agent's verified message afterwards does not silence the reply.
func TestAwaitReplyAddedAfterSigning(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		root := tree.Root(t.TempDir())
		signers, v := keys(t, agent, "bob")
		f := &fakeRunner{}
		cfg := config(root, f)
		cfg.Signer, cfg.Verifier = signers[agent], v
		h := start(t, cfg)

		waited := channel.Message{To: "bob", Content: channel.Content{Text: "bob, what is 2+2?"}}
		waited.SetAwaitReply()
		waited = postAs(t, root, signers[agent], waited)
		edited := postAs(t, root, signers[agent], channel.Message{To: "bob", Content: channel.Content{Text: "bob, tell me when done"}})
		addAwaitReply(t, root, edited)

		for _, parent := range []channel.Message{waited, edited} {
			r := channel.Message{To: agent, Content: channel.Content{Text: "answer to " + parent.ID}}
			r.Metadata.InReplyTo = parent.ID
			postAs(t, root, signers["bob"], r)
		}
		waitFor(t, "the skip", func() bool {
			return len(h.logs.find("skip", "reason", "reply to a message the agent sent with --wait")) == 1
		})
		waitFor(t, "the reply to the edited message to be run", func() bool { return len(f.Calls()) == 1 })
		holds(t, 300*time.Millisecond, "no second run", func() bool { return len(f.Calls()) == 1 })
	})
}

// addAwaitReply rewrites m's file with "await_reply": true in its
// metadata, as an account that can write the file could.
func addAwaitReply(t testing.TB, root tree.Root, m channel.Message) {
	t.Helper()
	path := filepath.Join(root.Channel(m.SessionID), m.File)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	var md map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(top["metadata"], &md); err != nil {
		t.Fatal(err)
	}
	md[channel.ExtAwaitReply] = true
	if top["metadata"], err = json.Marshal(md); err != nil {
		t.Fatal(err)
	}
	if data, err = json.Marshal(top); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".edit.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
