package watcher_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
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

// TestForgedKill: a kill request stops the job only when its requester
// may kill it (jobs.MayKill: here the job's asker, alice, who has a key)
// and it is authentic as that requester under the trust policy. One the
// watcher may not honour is logged, reported in the channel when forged,
// and removed, and the job runs on until its asker kills it.
func TestForgedKill(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		trust  signing.Policy
		by     string
		signed bool
		killed bool
		forged bool // reported in the channel
	}{
		{"forged under known", signing.Known, "alice", false, false, true},
		{"forged under any", signing.Any, "alice", false, true, false},
		{"signed under known", signing.Known, "alice", true, true, false},
		{"keyless stranger under known", signing.Known, "mallory", false, false, false},
		{"keyless stranger under any", signing.Any, "mallory", false, false, false},
		{"signed stranger", signing.Known, "bob", true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			signers, v := keys(t, "alice", "bob")
			release := make(chan struct{})
			cfg := config(root, &fakeRunner{reply: blockUntil(release)})
			cfg.Verifier, cfg.Trust = v, c.trust
			h := start(t, cfg)
			m := postAs(t, root, signers["alice"], channel.Message{To: agent, Content: channel.Content{Text: "refactor everything"}})
			waitJob(t, root, m.ID, "running", func(j jobs.Job) bool { return j.Status == jobs.Running })
			id := jobFor(root, agent, m.ID)
			var s *signing.Signer
			if c.signed {
				s = signers[c.by]
			}
			if err := jobs.RequestKill(root, agent, id, c.by, s); err != nil {
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
				return len(h.logs.find("kill request refused", "from", c.by)) > 0
			})
			if c.forged {
				waitForgedNotice(t, root, "kill request", id)
			}
			waitFor(t, "the refused request to be removed", func() bool { return !jobs.KillRequested(root, agent, id) })
			if c.forged {
				// Another forgery, in another name: refused and removed,
				// but the job's forged kills are reported once.
				if err := jobs.RequestKill(root, agent, id, "bob", nil); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "the second refused request to be removed", func() bool { return !jobs.KillRequested(root, agent, id) })
			}
			if j, err := jobs.Read(root, agent, id); err != nil || j.Status != jobs.Running {
				t.Fatalf("job after a refused kill: %s %v, want running", j.Status, err)
			}
			if err := jobs.RequestKill(root, agent, id, "alice", signers["alice"]); err != nil {
				t.Fatalf("the asker's request after a refused one: %v", err)
			}
			j := waitJob(t, root, m.ID, "killed by its asker", func(j jobs.Job) bool { return j.Done() })
			if j.Status != jobs.Killed {
				t.Errorf("job %s after its asker's request, want killed", j.Status)
			}
			want := 0
			if c.forged {
				want = 1
			}
			if n := forgedNotices(t, root, id); n != want {
				t.Errorf("%d notices of the refused kill, want %d", n, want)
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
