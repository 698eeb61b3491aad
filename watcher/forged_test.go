package watcher_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"collab/channel"
	"collab/internal/agent/claim"
	"collab/internal/agent/jobs"
	"collab/internal/identity/keyring"
	"collab/internal/identity/signing"
	"collab/internal/plumbing/tree"
)

// keys makes keys for the agents, trusts them in a keyring, and returns
// their signers and a verifier over the keyring.
func keys(t testing.TB, agents ...string) (map[string]*signing.Signer, *signing.Verifier) {
	t.Helper()
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	out := map[string]*signing.Signer{}
	for _, a := range agents {
		s, err := signing.NewKey(filepath.Join(t.TempDir(), a+".key"), a, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := ring.Trust(a, s.PublicKey()); err != nil {
			t.Fatal(err)
		}
		out[a] = s
	}
	return out, signing.NewVerifier(ring)
}

// TestForgedKill: a kill request in the name of bob, who has a key, stops
// the job only when it verifies as bob's, or under --trust any.
func TestForgedKill(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		trust  signing.Policy
		signed bool
		killed bool
	}{
		{"forged under known", signing.Known, false, false},
		{"forged under any", signing.Any, false, true},
		{"signed under known", signing.Known, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			signers, v := keys(t, "bob")
			release := make(chan struct{})
			cfg := config(root, &fakeRunner{reply: blockUntil(release)})
			cfg.Verifier, cfg.Trust = v, c.trust
			h := start(t, cfg)
			m := send(t, root, agent, "refactor everything")
			waitJob(t, root, m.ID, "running", func(j jobs.Job) bool { return j.Status == jobs.Running })
			var s *signing.Signer
			if c.signed {
				s = signers["bob"]
			}
			if err := jobs.RequestKill(root, agent, jobFor(root, agent, m.ID), "bob", s); err != nil {
				t.Fatal(err)
			}
			if c.killed {
				j := waitJob(t, root, m.ID, "killed", func(j jobs.Job) bool { return j.Done() })
				if j.Status != jobs.Killed {
					t.Errorf("job %s, want killed", j.Status)
				}
				return
			}
			waitFor(t, "the refusal to be logged", func() bool {
				return len(h.logs.find("kill request refused: it does not verify as its requester", "from", "bob", "verdict", "unsigned")) > 0
			})
			waitForgedNotice(t, root, "kill request", jobFor(root, agent, m.ID))
			close(release)
			j := waitJob(t, root, m.ID, "done", func(j jobs.Job) bool { return j.Done() })
			if j.Status != jobs.Completed {
				t.Errorf("job %s after a forged kill, want completed", j.Status)
			}
			if n := forgedNotices(t, root, jobFor(root, agent, m.ID)); n != 1 {
				t.Errorf("%d notices of the forged kill, want 1", n)
			}
		})
	}
}

// TestForgedClaim: a claim that says the message was answered already, in
// the folder of an agent with a key but not signed by it, is taken over
// under known (the watcher answers) and obeyed under any (it does not).
func TestForgedClaim(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		trust    signing.Policy
		answered bool
	}{{signing.Known, true}, {signing.Any, false}} {
		t.Run(string(c.trust), func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			signers, v := keys(t, agent)
			cfg := config(root, &fakeRunner{})
			cfg.Signer, cfg.Verifier, cfg.Trust = signers[agent], v, c.trust
			h := start(t, cfg)
			id := channel.NewID("alice", time.Now(), "f00d")
			forger := &claim.Store{Root: root, Self: claim.Owner{Agent: agent, Host: "elsewhere", Instance: "forger"}}
			if _, _, err := forger.Acquire(chName, id); err != nil {
				t.Fatal(err)
			}
			if err := forger.Finish(chName, id, claim.Replied, "", "answered, honest"); err != nil {
				t.Fatal(err)
			}
			m := post(t, root, channel.Message{ID: id, To: agent, Content: channel.Content{Text: "hello"}})
			if !c.answered {
				waitFor(t, "the message to be skipped", func() bool { return len(h.logs.find("skip", "msg_id", m.ID, "reason", "already replied")) > 0 })
				if n := len(repliesTo(messages(t, root), m.ID)); n != 0 {
					t.Errorf("%d replies, want none", n)
				}
				return
			}
			waitReplies(t, root, m.ID)
			if len(h.logs.find("forged claim: taking it over", "msg_id", m.ID)) == 0 {
				t.Error("the forged claim was not logged")
			}
			waitForgedNotice(t, root, "claim", m.ID)
			cl := waitClaim(t, root, agent, m.ID)
			if got := cl.Verify(v, chName, agent, m.ID, cl.Takeovers); got != signing.Verified {
				t.Errorf("the watcher's claim: %v, want verified", got)
			}
		})
	}
}

// TestSignedHeartbeat: a watcher with a key signs its heartbeats.
func TestSignedHeartbeat(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	signers, v := keys(t, agent)
	cfg := config(root, &fakeRunner{})
	cfg.Signer, cfg.Verifier = signers[agent], v
	start(t, cfg)
	s := readPresence(t, root, agent)
	if got := s.Verify(v, agent); got != signing.Verified {
		t.Errorf("heartbeat: %v, want verified", got)
	}
}

// forgedNotices counts the notices in the channel that report a forged
// file about id.
func forgedNotices(t *testing.T, root tree.Root, id string) int {
	t.Helper()
	n := 0
	for _, m := range notices(messages(t, root)) {
		if m.Metadata.InReplyTo == "" && strings.Contains(m.Content.Text, "for "+id+":") {
			n++
		}
	}
	return n
}

// waitForgedNotice waits for the notice that reports a forged what about
// id in the channel.
func waitForgedNotice(t *testing.T, root tree.Root, what, id string) {
	t.Helper()
	waitFor(t, "the notice of the forged "+what, func() bool {
		for _, m := range notices(messages(t, root)) {
			if strings.Contains(m.Content.Text, "ignored a "+what+" for "+id+":") {
				return true
			}
		}
		return false
	})
}
