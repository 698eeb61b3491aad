package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// onlyMessage returns the one message in a channel.
func onlyMessage(t *testing.T, root, ch string) channel.Message {
	t.Helper()
	msgs, skips, err := channel.ReadAll(tree.Root(root), ch, channel.ReaderOptions{})
	if err != nil || len(skips) > 0 || len(msgs) != 1 {
		t.Fatalf("channel %s: %d messages, skips %v, err %v; want one message", ch, len(msgs), skips, err)
	}
	return msgs[0]
}

func TestSend(t *testing.T) {
	host, _ := os.Hostname()
	tests := []struct {
		name  string
		env   map[string]string
		stdin string
		args  []string
		want  channel.Message // From, To, Type, SessionID, text, code
	}{
		{
			name: "seed flags",
			args: []string{"--agent", "supervisor", "--channel", "agent-os-paper", "--to", "codex", "--text", "Please review this"},
			want: channel.Message{From: "supervisor", To: "codex", Type: "chat", SessionID: "agent-os-paper", Content: channel.Content{Text: "Please review this"}},
		},
		{
			name: "original tool flags and words",
			args: []string{"-f", "qc-1", "-s", "team-x", "-t", "docs-1", "-c", "x := 1", "--type", "qc_review", "looks", "good"},
			want: channel.Message{From: "qc-1", To: "docs-1", Type: "qc_review", SessionID: "team-x", Content: channel.Content{Text: "looks good", Code: ptr("x := 1")}},
		},
		{
			name: "environment",
			env:  map[string]string{"COLLAB_AGENT": "claude", "COLLAB_SESSION": "dev"},
			args: []string{"hello"},
			want: channel.Message{From: "claude", To: "all", Type: "chat", SessionID: "dev", Content: channel.Content{Text: "hello"}},
		},
		{
			name: "channel env wins over session env",
			env:  map[string]string{"COLLAB_AGENT": "claude", "COLLAB_SESSION": "old", "COLLAB_CHANNEL": "new"},
			args: []string{"hi"},
			want: channel.Message{From: "claude", To: "all", Type: "chat", SessionID: "new", Content: channel.Content{Text: "hi"}},
		},
		{
			name:  "stdin",
			stdin: "line one\n$(rm -rf /) `x` ; \"q\"\n",
			args:  []string{"--agent", "a", "--channel", "c", "-"},
			want:  channel.Message{From: "a", To: "all", Type: "chat", SessionID: "c", Content: channel.Content{Text: "line one\n$(rm -rf /) `x` ; \"q\""}},
		},
		{
			name:  "text flag stdin",
			stdin: "from stdin",
			args:  []string{"--agent", "a", "--channel", "c", "--text", "-"},
			want:  channel.Message{From: "a", To: "all", Type: "chat", SessionID: "c", Content: channel.Content{Text: "from stdin"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			env := map[string]string{"COLLAB_ROOT": root}
			for k, v := range tt.env {
				env[k] = v
			}
			r := runCollab(t, env, tt.stdin, append([]string{"send"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			got := onlyMessage(t, root, tt.want.SessionID)
			if id := strings.TrimSpace(r.stdout); id != got.ID || got.File != id+".json" {
				t.Errorf("printed id %q; file %s has id %s", id, got.File, got.ID)
			}
			if got.From != tt.want.From || got.To != tt.want.To || got.Type != tt.want.Type || got.Content.Text != tt.want.Content.Text {
				t.Errorf("got from=%s to=%s type=%s text=%q; want %s %s %s %q", got.From, got.To, got.Type, got.Content.Text,
					tt.want.From, tt.want.To, tt.want.Type, tt.want.Content.Text)
			}
			if (got.Content.Code == nil) != (tt.want.Content.Code == nil) || got.Content.Code != nil && *got.Content.Code != *tt.want.Content.Code {
				t.Errorf("code = %v, want %v", got.Content.Code, tt.want.Content.Code)
			}
			if got.Metadata.Host != host || got.Metadata.Mode != "chat" || got.Metadata.Turn != tt.want.From || got.Metadata.Hops != 0 {
				t.Errorf("metadata = %+v", got.Metadata)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestSendJSON(t *testing.T) {
	root := newTree(t)
	r := runCollab(t, map[string]string{"COLLAB_ROOT": root}, "", "send", "--agent", "a", "--channel", "c", "--json", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m := onlyMessage(t, root, "c")
	data, err := os.ReadFile(filepath.Join(root, "channels", "c", m.File))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(r.stdout) != string(data) {
		t.Errorf("--json printed\n%s\nfile holds\n%s", r.stdout, data)
	}
	var all map[string]any
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "timestamp", "session_id", "from", "to", "type", "content", "metadata"} {
		if _, ok := all[k]; !ok {
			t.Errorf("written message lacks %q: %s", k, data)
		}
	}
}

func TestSendBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"agent dotdot", []string{"--agent", "../x", "--channel", "c", "hi"}, "agent name"},
		{"channel slash", []string{"--agent", "a", "--channel", "a/b", "hi"}, "channel name"},
		{"channel dotdot", []string{"--agent", "a", "--channel", "..", "hi"}, "channel name"},
		{"empty channel", []string{"--agent", "a", "--channel", "", "hi"}, "no channel"},
		{"no agent", []string{"--channel", "c", "hi"}, "no sender"},
		{"recipient space", []string{"--agent", "a", "--channel", "c", "--to", "b c", "hi"}, "recipient name"},
		{"recipient dash", []string{"--agent", "a", "--channel", "c", "--to=-x", "hi"}, "recipient name"},
		{"no text", []string{"--agent", "a", "--channel", "c"}, "no text"},
		{"blank text", []string{"--agent", "a", "--channel", "c", "--text", "  "}, "empty"},
		{"text twice", []string{"--agent", "a", "--channel", "c", "--text", "x", "y"}, "not both"},
		{"bad reply id", []string{"--agent", "a", "--channel", "c", "--in-reply-to", "../../etc/passwd", "hi"}, "not a message id"},
		{"too large", []string{"--agent", "a", "--channel", "c", strings.Repeat("x", channel.MaxMessageSize)}, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			r := runCollab(t, map[string]string{"COLLAB_ROOT": root}, "", append([]string{"send"}, tt.args...)...)
			if r.code != 2 {
				t.Errorf("exit code = %d, want 2", r.code)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not say %q", r.stderr, tt.want)
			}
			if tt.name != "too large" { // the channel folder may exist; no message may
				if files := filesUnder(t, root); len(files) > 0 {
					t.Errorf("created %v", files)
				}
			} else if msgs, _, _ := channel.ReadAll(tree.Root(root), "c", channel.ReaderOptions{}); len(msgs) > 0 {
				t.Errorf("a too-large message was written")
			}
		})
	}
}

func TestSendUnknownRecipientWarns(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_AGENT": "a", "COLLAB_CHANNEL": "c"}
	r := runCollab(t, env, "", "send", "--to", "ghost", "boo")
	if r.code != 0 || !strings.Contains(r.stderr, `"ghost" is not a known agent`) {
		t.Errorf("unknown recipient: exit %d, stderr %q; want exit 0 and a warning", r.code, r.stderr)
	}
	os.MkdirAll(filepath.Join(root, "registry", "agents"), 0o777)
	os.WriteFile(filepath.Join(root, "registry", "agents", "codex.json"), []byte(`{"id":"codex"}`), 0o666)
	r = runCollab(t, env, "", "send", "--to", "codex", "hi")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("registered recipient: exit %d, stderr %q; want exit 0, no warning", r.code, r.stderr)
	}
	r = runCollab(t, env, "", "send", "--to", "all", "hi")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("broadcast: exit %d, stderr %q; want exit 0, no warning", r.code, r.stderr)
	}
}

func TestSendReplyThreadAndHops(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "c"}
	first := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "human", "--to", "all", "start").stdout)
	env["COLLAB_HOPS"] = "2" // as inside a watcher's model run
	second := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "claude", "--in-reply-to", first, "reply").stdout)
	m, err := channel.Lookup(tree.Root(root), "c", second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Metadata.InReplyTo != first || m.Metadata.Thread != first || m.Metadata.Hops != 3 {
		t.Errorf("reply metadata = %+v; want in_reply_to=thread=%s, hops 3", m.Metadata, first)
	}
	delete(env, "COLLAB_HOPS")
	r := runCollab(t, env, "", "send", "--agent", "human", "--in-reply-to", "msg-20200101-000000-x-abcd", "late")
	if r.code != 0 || !strings.Contains(r.stderr, "not in channel") {
		t.Errorf("reply to a missing message: exit %d, stderr %q; want 0 and a warning", r.code, r.stderr)
	}
}

// send --artifact refers to files (path, size, sha256 in
// content.artifacts; the file is not copied), read shows them, in text
// and JSON, for collab's messages and another writer's.
func TestSendArtifacts(t *testing.T) {
	root := newTree(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b b.bin")
	os.WriteFile(a, []byte("hello\n"), 0o644)
	os.WriteFile(b, nil, 0o644)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_AGENT": "alice"}
	r := runCollab(t, env, "", "send", "--channel", "c", "--artifact", a, "--artifact", b, "see", "these")
	if r.code != 0 {
		t.Fatalf("send: exit %d: %s", r.code, r.stderr)
	}
	m, err := channel.Lookup(tree.Root(root), "c", strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	got := m.Content.ArtifactList()
	if len(got) != 2 || got[0].Path != a || *got[0].Size != 6 || got[0].SHA256 != "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" || got[1].Path != b || *got[1].Size != 0 {
		t.Errorf("artifacts %+v", got)
	}
	post := func(data string) {
		os.WriteFile(filepath.Join(root, "channels", "c", "msg-20200101-000000-seed-0001.json"), []byte(data), 0o644)
	}
	post(`{"from":"seed","content":{"text":"old style","artifacts":["notes.md",{"path":"/srv/x.tar","size":9}]}}`)

	r = runCollab(t, env, "", "read", "--channel", "c")
	for _, want := range []string{"  artifact: " + a + " (6 bytes, sha256 5891b5b522d5)\n", "  artifact: " + b + " (0 bytes, sha256 e3b0c44298fc)\n",
		"  artifact: notes.md\n", "  artifact: /srv/x.tar (9 bytes)\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("read does not show %q:\n%s", want, r.stdout)
		}
	}
	r = runCollab(t, env, "", "read", "--channel", "c", "--json")
	if !strings.Contains(r.stdout, `"artifacts":[{"path":"`+a+`","size":6,"sha256":"5891b5b5`) || !strings.Contains(r.stdout, `"artifacts":["notes.md",{"path":"/srv/x.tar","size":9}]`) {
		t.Errorf("read --json:\n%s", r.stdout)
	}

	for _, bad := range []string{filepath.Join(dir, "missing"), dir} {
		r = runCollab(t, env, "", "send", "--channel", "c", "--artifact", bad, "x")
		if r.code != exitUsage || !strings.Contains(r.stderr, "artifact") {
			t.Errorf("--artifact %s: exit %d, %q; want 2", bad, r.code, r.stderr)
		}
	}
	if n := len(filesUnder(t, filepath.Join(root, "channels", "c"))); n != 2 {
		t.Errorf("%d messages in c; a refused artifact must send nothing", n)
	}
}
