package web

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/presence"
)

// TestAPIPostIsAPersons: a person's post from the dashboard carries hops
// 0 (not 1: the pair-rate guard is for agents) and is announced through
// the service's Publish (NATS when collab serve has it).
func TestAPIPostIsAPersons(t *testing.T) {
	root := tree.Root(t.TempDir())
	if err := os.MkdirAll(root.Channels(), 0o700); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var published []string
	svc := service.NewMount(service.Config{Root: root, Publish: func(_ context.Context, m *channel.Message) error {
		mu.Lock()
		defer mu.Unlock()
		published = append(published, m.ID)
		return nil
	}})
	ts := newTestServer(t, Config{Root: root, Service: svc})
	code, body := ts.do(t, "POST", "/api/channels/dev/messages", `{"text":"hello","to":"coder@i2"}`)
	if code != http.StatusCreated {
		t.Fatalf("post: %d %s", code, body)
	}
	var v MessageView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	m, err := channel.Lookup(root, "dev", v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Hops != 0 || m.From != "alice" || m.To != "coder--i2" {
		t.Errorf("posted %+v; want from alice to coder--i2 at hops 0", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(published) != 1 || published[0] != v.ID {
		t.Errorf("published %v; want %s", published, v.ID)
	}
}

// TestWhoShowsInstanceAgentsByAddress: the who board names an agent of a
// workflow instance as NAME@INSTANCE.
func TestWhoShowsInstanceAgentsByAddress(t *testing.T) {
	ts := newTestServer(t, Config{})
	if err := presence.Write(ts.root, presence.Status{AgentID: "coder--i1", State: presence.StateAwake, Substate: presence.SubIdle}); err != nil {
		t.Fatal(err)
	}
	code, body := ts.do(t, "GET", "/api/who", "")
	if code != http.StatusOK || !strings.Contains(body, `"agent":"coder--i1"`) || !strings.Contains(body, `"address":"coder@i1"`) {
		t.Errorf("who: %d %s; want coder--i1 at coder@i1", code, body)
	}
	if _, board := ts.do(t, "GET", "/board", ""); !strings.Contains(board, `<a href="/agents/coder--i1">coder@i1</a>`) {
		t.Errorf("board: %s", board)
	}
}
