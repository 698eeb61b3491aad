package join_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

var (
	buildOnce sync.Once
	collabBin string
	buildErr  error
)

// collab builds this checkout's collab once: the joined CLI runs it as
// its hook and its MCP server.
func collab(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "collab-join-test-")
		if err != nil {
			buildErr = err
			return
		}
		collabBin = filepath.Join(dir, "collab")
		out, err := exec.Command("go", "build", "-o", collabBin, "github.com/collabdev/collab/cmd/collab").CombinedOutput()
		if err != nil {
			buildErr = err
			collabBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build collab: %v: %s", buildErr, collabBin)
	}
	return collabBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if collabBin != "" {
		os.RemoveAll(filepath.Dir(collabBin))
	}
	os.Exit(code)
}

// markerRE finds the ids of the collab messages a request carries (in a
// JSON transcript the quotes may be escaped).
var markerRE = regexp.MustCompile(`id=\\?"(msg-[A-Za-z0-9-]+)\\?"`)

// answering is a fake model that answers each collab message it is shown
// once, by calling the collab MCP tool channel_send in reply to it (to
// the sender), then says it did; a prompt "RUN: CMD" runs CMD in the
// shell; anything else is echoed.
type answering struct {
	mu       sync.Mutex
	answered map[string]bool
	tool     string // the tool's name as the CLI offers it
}

func (a *answering) reply(r fakemodel.Request) fakemodel.Reply {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := r.ToolResult(); ok {
		return fakemodel.Text("done.")
	}
	if cmd, ok := strings.CutPrefix(r.Prompt(), "RUN: "); ok {
		return fakemodel.Shell(cmd)
	}
	if r.HasTool(a.tool) {
		for _, m := range markerRE.FindAllStringSubmatch(r.Transcript(), -1) {
			if id := m[1]; !a.answered[id] {
				a.answered[id] = true
				return fakemodel.Tool(a.tool, map[string]any{"message": "thanks, on it", "to": "bob", "in_reply_to": id})
			}
		}
	}
	return fakemodel.Echo(r)
}

// state is where message m stands for ana.
func state(root tree.Root, m channel.Message) string {
	return delivery.StateFor(root, m.SessionID, &m, "ana", delivery.Options{}).State
}

// waitState waits for m to reach state for ana.
func waitState(t *testing.T, root tree.Root, m channel.Message, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for state(root, m) != want {
		if time.Now().After(deadline) {
			t.Fatalf("message %s is %s for ana, want %s", m.ID, state(root, m), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// post posts text from from to ana in dev.
func post(t *testing.T, root tree.Root, from, text string) channel.Message {
	t.Helper()
	m := channel.Message{SessionID: "dev", From: from, To: "ana", Content: channel.Content{Text: text}}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// replyTo returns ana's reply to id in dev, if any.
func replyTo(t *testing.T, root tree.Root, id string) (channel.Message, bool) {
	msgs, _, err := channel.ReadAll(root, "dev", channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.From == "ana" && m.Metadata.InReplyTo == id {
			return m, true
		}
	}
	return channel.Message{}, false
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
