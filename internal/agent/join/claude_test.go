package join_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/internal/testsupport/tmuxtest"
	"github.com/collabdev/collab/presence"
)

// claudeJoin starts `collab join --cli claude` as ana on dev under tmux,
// with the real Claude Code against srv, and waits for its prompt.
func claudeJoin(t *testing.T, srv *fakemodel.Server, c *fakemodel.CLI, root tree.Root) *tmuxtest.Session {
	t.Helper()
	// What a person's first start of Claude Code answers: onboarding done,
	// the API key approved, the folder trusted.
	key := fakemodel.FakeKey
	writeJSONFile(t, filepath.Join(c.Home, ".claude.json"), map[string]any{
		"hasCompletedOnboarding": true, "theme": "dark",
		"customApiKeyResponses": map[string]any{"approved": []string{key[max(len(key)-20, 0):]}, "rejected": []string{}},
		"projects":              map[string]any{c.Dir: map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []string{}}},
	})
	env := append(c.Env, "PATH="+filepath.Dir(c.Path)+":"+os.Getenv("PATH"), "COLLAB_ROOT="+string(root))
	s := tmuxtest.Start(t, c.Dir, env, collab(t), "join", "--agent", "ana", "--channel", "dev", "--poll", "100ms",
		"--", "--allowedTools", "Bash")
	s.WaitFor(time.Minute, "for shortcuts")
	return s
}

// TestJoinClaude: a message for ana arriving while her Claude Code
// session is idle starts a turn; the session answers it with the collab
// MCP tool in reply to it; the message goes offered → read → answered.
func TestJoinClaude(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real CLI")
	}
	srv := fakemodel.Start(t)
	c := srv.CLI(t, fakemodel.ClaudeCode)
	a := &answering{answered: map[string]bool{}, tool: "mcp__collab__channel_send"}
	srv.Script(a.reply)
	root := tree.Root(t.TempDir())
	if err := os.MkdirAll(root.Channel("dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := claudeJoin(t, srv, c, root)
	defer func() {
		if t.Failed() {
			t.Logf("screen:\n%s", s.Screen())
		}
	}()
	if p, err := presence.Read(root, "ana"); err != nil || p.Substate != presence.SubLive || p.Joined == nil || p.Joined.CLI != "claude" {
		t.Errorf("presence %+v (%v), want AWAKE/LIVE with claude", p, err)
	}

	m := post(t, root, "bob", "the API changed, see the doc")
	waitState(t, root, m, delivery.Answered, time.Minute)
	r, ok := replyTo(t, root, m.ID)
	if !ok || r.Content.Text != "thanks, on it" || r.To != "bob" {
		t.Errorf("reply %+v, want ana's answer to bob", r)
	}
	for _, kind := range []string{delivery.KindOffered, delivery.KindRead} {
		if _, err := delivery.ReadMark(root, kind, "dev", "ana", m.ID); err != nil {
			t.Errorf("no %s mark: %v", kind, err)
		}
	}
	screen := s.WaitFor(30*time.Second, "done.")
	if !strings.Contains(screen, "collab: new message") {
		t.Errorf("screen:\n%s", screen)
	}
}
