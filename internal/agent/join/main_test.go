package join_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/internal/testsupport/tmuxtest"
	"github.com/collabdev/collab/presence"
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
// once, first thing, by calling the collab MCP tool channel_send in reply
// to it (to the sender), and after a tool's result says "done."; a prompt
// "RUN: CMD" runs CMD in the shell; anything else is echoed.
type answering struct {
	mu       sync.Mutex
	answered map[string]bool
	tool     string // the tool's name as the CLI offers it
	mcp      bool   // Codex: the tool is in namespace mcp__collab, maybe behind tool_search
}

func (a *answering) reply(r fakemodel.Request) fakemodel.Reply {
	a.mu.Lock()
	defer a.mu.Unlock()
	tool := a.tool
	if tool == "" { // the one whose name ends so (Gemini CLI: mcp_collab_channel_send)
		for _, name := range r.Tools {
			if strings.HasSuffix(name, "channel_send") {
				tool = name
			}
		}
	}
	if a.mcp && (r.HasTool("tool_search") || slices.Contains(r.Namespaces["mcp__collab"], "channel_send")) {
		for _, m := range markerRE.FindAllStringSubmatch(r.Transcript(), -1) {
			if id := m[1]; !a.answered[id] {
				a.answered[id] = true
				return fakemodel.MCPTool("collab", "channel_send", map[string]any{"message": "thanks, on it", "to": "bob", "in_reply_to": id})
			}
		}
	}
	if tool != "" && r.HasTool(tool) {
		for _, m := range markerRE.FindAllStringSubmatch(r.Transcript(), -1) {
			if id := m[1]; !a.answered[id] {
				a.answered[id] = true
				return fakemodel.Tool(tool, map[string]any{"message": "thanks, on it", "to": "bob", "in_reply_to": id})
			}
		}
	}
	if _, ok := r.ToolResult(); ok {
		return fakemodel.Text("done.")
	}
	if cmd, ok := strings.CutPrefix(r.Prompt(), "RUN: "); ok {
		return fakemodel.Shell(cmd)
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

// firstWith returns the first model request whose transcript holds
// text.
func firstWith(t *testing.T, srv *fakemodel.Server, text string) (fakemodel.Request, bool) {
	for _, r := range srv.Requests() {
		if strings.Contains(r.Transcript(), text) {
			return r, true
		}
	}
	return fakemodel.Request{}, false
}

// screens, when set (-screens DIR), is where the tests write the screens
// the docs show.
var screens = flag.String("screens", "", "write the joined sessions' screens into this folder (docs/screens)")

// saveScreen writes screen as name in -screens.
func saveScreen(t *testing.T, name, screen string) {
	if *screens == "" {
		return
	}
	var lines []string
	for _, l := range strings.Split(screen, "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	out := strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
	if err := os.WriteFile(filepath.Join(*screens, name), []byte(out), 0o644); err != nil {
		t.Error(err)
	}
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

// trustKey makes agent a key trusted in root's keyring.
func trustKey(t *testing.T, root tree.Root, agent string) *signing.Signer {
	t.Helper()
	key, err := signing.NewKey(filepath.Join(t.TempDir(), agent+".key"), agent, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := keyring.Open(root.Keys()).Trust(agent, key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return key
}

// postSigned posts text from from to ana in dev, signed with key (nil:
// unsigned).
func postSigned(t *testing.T, root tree.Root, key *signing.Signer, from, text string) channel.Message {
	t.Helper()
	m := channel.Message{SessionID: "dev", From: from, To: "ana", Content: channel.Content{Text: text}}
	if err := (&channel.Writer{Root: root, Signer: key}).Post(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitPresence waits for ana's heartbeat to say state.
func waitPresence(t *testing.T, root tree.Root, state string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := presence.Read(root, "ana")
		if err == nil && p.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ana's presence %+v (%v), want %s", p, err, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitIdle waits until the session's turn is over: every model call
// answered, and none for half a second.
func waitIdle(t *testing.T, srv *fakemodel.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.WaitQuiet(ctx, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// ask types a prompt into the session and waits for the model call it
// makes. A TUI still starting (or drawing) may drop the Enter, leaving
// the text in its input box: then Enter is pressed again, as a person
// would.
func ask(t *testing.T, s *tmuxtest.Session, srv *fakemodel.Server, text string) {
	t.Helper()
	n := len(srv.Requests())
	s.Type(text)
	// A model call that does not carry the prompt (one the CLI makes of
	// its own at start) does not say the prompt went in.
	asked := func() bool {
		for _, r := range srv.Requests()[n:] {
			if strings.Contains(r.Prompt(), text) {
				return true
			}
		}
		return false
	}
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		var err error
		for !asked() && err == nil {
			_, err = srv.WaitRequests(ctx, len(srv.Requests())+1)
		}
		cancel()
		if asked() {
			return
		}
		if try == 3 {
			t.Fatalf("no model call with the prompt %q: %v", text, err)
		}
		s.Keys("Enter")
	}
}

// quit types the CLI's quit command and waits for it to exit, pressing
// Enter again should the TUI drop it (see ask).
func quit(t *testing.T, s *tmuxtest.Session, cmd string) {
	t.Helper()
	s.Type(cmd)
	for try := 0; !s.Until(10*time.Second, func(string) bool { return !s.Alive() }); try++ {
		if try == 3 {
			t.Fatalf("the CLI did not exit after %s", cmd)
		}
		s.Keys("Enter")
	}
}
