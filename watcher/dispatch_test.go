package watcher_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// TestDispatchOrder: when the CLI starts, the message is claimed (that is
// what makes the reply unique); the job record, WORKING presence and the
// state naming the message follow while the CLI runs. The transcript comes
// from the messages the watcher read, not from another listing.
func TestDispatchOrder(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	release := make(chan struct{})
	type atStart struct {
		claim  claim.Claim
		err    error
		prompt string
	}
	seen := make(chan atStart, 1)
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		cl, err := readClaim(root, agent, c.msgID())
		seen <- atStart{cl, err, c.Req.Prompt}
		return blockUntil(release)(c)
	}}
	cfg := config(root, r)
	cfg.Context = 2
	h := start(t, cfg)

	// Named after the watcher's start (a second on), so that its memory of
	// them is complete.
	base := time.Now().Add(2 * time.Second).Truncate(time.Second)
	var earlier []channel.Message
	for i, text := range []string{"first words", "second words", "third words"} {
		earlier = append(earlier, post(t, root, channel.Message{
			ID: channel.NewID("bob", base.Add(time.Duration(i)*time.Second), "000"+string(rune('0'+i))), From: "bob", To: "all",
			Content: channel.Content{Text: text},
		}))
	}
	waitFor(t, "the watcher to read the earlier messages", func() bool {
		return len(h.logs.find("skip", "msg_id", earlier[2].ID)) > 0
	})
	// Gone from the folder since it was read: a transcript read from the
	// folder would not have it.
	if err := os.Remove(filepath.Join(root.Channel(chName), earlier[2].File)); err != nil {
		t.Fatal(err)
	}
	m := post(t, root, channel.Message{ID: channel.NewID("alice", base.Add(3*time.Second), "00aa"), To: agent, Content: channel.Content{Text: "what now?"}})

	var s atStart
	select {
	case s = <-seen:
	case <-time.After(waitLong):
		t.Fatal("the CLI was not run")
	}
	if s.err != nil || s.claim.Status != claim.Working || s.claim.Owner.Host != testHost {
		t.Errorf("claim when the CLI started: %+v, %v; want working, owned by this watcher", s.claim, s.err)
	}
	for i, e := range earlier {
		if got, want := strings.Contains(s.prompt, e.Content.Text), i >= 1; got != want {
			t.Errorf("prompt has %q: %v, want %v (Context 2)", e.Content.Text, got, want)
		}
	}

	waitJob(t, root, m.ID, "running", func(j jobs.Job) bool { return j.Status == jobs.Running })
	waitFor(t, "WORKING presence", func() bool {
		st, err := presence.Read(root, agent)
		return err == nil && st.Substate == presence.SubWorking && st.MessageID == m.ID
	})
	waitFor(t, "the state to name the running message", func() bool {
		data, err := os.ReadFile(filepath.Join(root.State(agent), "watch.json"))
		var sealed struct {
			State json.RawMessage `json:"state"` // the sealed format
		}
		if err == nil && json.Unmarshal(data, &sealed) == nil && sealed.State != nil {
			data = sealed.State
		}
		var st struct {
			Pending []struct{ ID string } `json:"pending"`
		}
		return err == nil && json.Unmarshal(data, &st) == nil && len(st.Pending) == 1 && st.Pending[0].ID == m.ID
	})
	close(release)
	waitReplies(t, root, m.ID)
	waitJob(t, root, m.ID, "completed", func(j jobs.Job) bool { return j.Status == jobs.Completed && j.Reply != "" })
}
