package watcher_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// TestCLIFailures runs a real CLI process that fails in the ways a model
// CLI does.
func TestCLIFailures(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		text       string
		postErrors bool
		wantNote   string // in the claim's note
	}{
		{name: "exit 1", text: kwExit1, wantNote: "exit status 1: boom: the model is unavailable"},
		{name: "exit 1 posts an error", text: kwExit1, postErrors: true},
		{name: "empty output", text: kwEmpty, wantNote: modelcli.ErrEmpty.Error()},
		{name: "hangs past the timeout", text: kwHang, wantNote: "timed out"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			cfg := config(root, helperCLI("script"))
			cfg.Context = -1
			cfg.Timeout = waitLong
			if tt.text == kwHang {
				cfg.Timeout = time.Second
			}
			cfg.PostErrors = tt.postErrors
			shown := &presenceLog{}
			cfg.Publisher = shown
			h := start(t, cfg)

			m := send(t, root, agent, "please "+tt.text)
			began := time.Now()
			// A CLI that fails at once shows WORKING for a few milliseconds:
			// look for it among the presences written, not in the file.
			waitFor(t, "the CLI to start", func() bool { return shown.saw(presence.SubWorking, m.ID) })
			c := waitClaim(t, root, agent, m.ID)
			took := time.Since(began)
			// The next message is still answered.
			next := send(t, root, agent, "and now a normal question")
			msgs := waitReplies(t, root, next.ID)
			waitSettled(t, root, agent)

			if c.Status != claim.Failed {
				t.Errorf("claim = %s %q, want %s", c.Status, c.Note, claim.Failed)
			}
			if !strings.Contains(c.Note, tt.wantNote) {
				t.Errorf("claim note = %q, want it to contain %q", c.Note, tt.wantNote)
			}
			if rs := repliesTo(msgs, next.ID); len(rs) != 1 || rs[0].Content.Text != "answer" {
				t.Errorf("replies to the next message = %+v, want one \"answer\"", rs)
			}
			rs := repliesTo(msgs, m.ID)
			if !tt.postErrors {
				if len(rs) != 0 {
					t.Errorf("%d replies to a failed run, want 0: %+v", len(rs), rs)
				}
			} else {
				if len(rs) != 1 {
					t.Fatalf("%d replies with PostErrors, want 1 error reply", len(rs))
				}
				got := rs[0]
				if !strings.HasPrefix(got.Content.Text, "[collab] "+agent+" could not answer: ") || len(got.Content.Text) > 600 {
					t.Errorf("error reply = %q, want a short \"[collab] %s could not answer: …\"", got.Content.Text, agent)
				}
				if !strings.Contains(got.Content.Text, "exit status 1") {
					t.Errorf("error reply %q does not say what failed", got.Content.Text)
				}
				if got.To != m.From || got.Metadata.Hops != 1 || c.Reply != got.ID {
					t.Errorf("error reply to %s hops %d (claim reply %q), want to %s hops 1 reply %s", got.To, got.Metadata.Hops, c.Reply, m.From, got.ID)
				}
			}
			logs := h.logs.find("failed", "msg_id", m.ID)
			if len(logs) != 1 {
				t.Fatalf("%d \"failed\" log lines for the message, want 1", len(logs))
			}
			if tt.text == kwExit1 && !strings.Contains(logs[0]["stderr"].(string), "boom: the model is unavailable") {
				t.Errorf("failed log line lacks the CLI's stderr: %v", logs[0])
			}
			if s := readPresence(t, root, agent); s.Counters["failed"] != 1 {
				t.Errorf("presence counters = %v, want failed=1", s.Counters)
			}
			if tt.text == kwHang {
				// Timeout, then SIGTERM (ignored), then SIGKILL after the
				// kill grace.
				if max := cfg.Timeout + 300*time.Millisecond + 5*time.Second; took > max {
					t.Errorf("the hanging CLI was stopped after %v, want within %v", took, max)
				}
			}
		})
	}
}

// TestCLIHugeOutput: a CLI that prints 10 MB is cut to the output cap, and
// the reply still fits a message (1 MiB, JSON included).
func TestCLIHugeOutput(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	cfg := config(root, helperCLI("script"))
	cfg.Context = -1
	h := start(t, cfg)
	m := send(t, root, agent, "please "+kwBig)
	c := waitClaim(t, root, agent, m.ID)
	waitSettled(t, root, agent)
	if len(h.logs.find("output truncated", "msg_id", m.ID)) != 1 {
		t.Errorf("no \"output truncated\" log line")
	}
	rs := repliesTo(messages(t, root), m.ID)
	if len(rs) != 1 {
		t.Fatalf("%d replies to a 10 MB answer, want 1 (cut); claim %s %q", len(rs), c.Status, c.Note)
	}
	fi, err := os.Stat(filepath.Join(root.Channel(chName), rs[0].File))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > channel.MaxMessageSize {
		t.Errorf("reply file is %d bytes, over the %d limit", fi.Size(), channel.MaxMessageSize)
	}
	if text := rs[0].Content.Text; len(text) < 512<<10 || !strings.HasPrefix(text, strings.Repeat("x", 1023)+"\n") {
		t.Errorf("reply holds %d bytes of the output; want most of the first MiB", len(text))
	}
}

// TestInjection: message text full of shell syntax reaches the CLI byte
// for byte, on standard input or as one argument, and nothing in it is run.
func TestInjection(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cmd  func(capture string) *modelcli.Command
	}{
		{"stdin", func(capture string) *modelcli.Command { return helperCLI("capture", capture) }},
		{"argument", func(capture string) *modelcli.Command {
			return helperCLI("capture-arg", capture, modelcli.Placeholder)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			scratch := t.TempDir()
			workdir := t.TempDir()
			capture := filepath.Join(scratch, "prompt")
			marker := func(n string) string { return filepath.Join(scratch, "pwned-"+n) }

			text := strings.Join([]string{
				"codex please run $(touch " + marker("1") + ")",
				"`touch " + marker("2") + "`; touch " + marker("3") + " && touch pwned-4 || touch pwned-5",
				`"$(touch ` + marker("6") + `)" '$(touch ` + marker("7") + `)' \" \' \\ $HOME ${PATH} $((1+1)) > pwned-8 < /etc/passwd | tee pwned-9 &`,
				"```\n````` fences ```` and ~~~",
				"\r\nCRLF line\rCR line\ttab\v\f",
				"{prompt} %s %n %x {{.Agent}} {{template \"x\"}}",
				"noise: " + noise(rand.New(rand.NewPCG(1, 2)), 2000),
			}, "\n")
			if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
				t.Fatal("test text must be valid UTF-8 without NUL")
			}
			cfg := config(root, tt.cmd(capture))
			cfg.Workdir = workdir
			start(t, cfg)
			m := send(t, root, "all", text)
			msgs := waitReplies(t, root, m.ID)
			if rs := repliesTo(msgs, m.ID); len(rs) != 1 || rs[0].Content.Text != "captured" {
				t.Fatalf("replies = %+v, want one \"captured\"", rs)
			}
			stored, err := channel.Lookup(root, chName, m.ID)
			if err != nil || stored.Content.Text != text {
				t.Fatalf("stored message text differs from what was sent (%v)", err)
			}
			got, err := os.ReadFile(capture)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), text) {
				t.Errorf("the CLI's prompt does not hold the message text byte for byte\nprompt:\n%q\ntext:\n%q", got, text)
			}
			for _, dir := range []string{scratch, workdir} {
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if e.Name() != "prompt" {
						t.Errorf("something ran: %s appeared", filepath.Join(dir, e.Name()))
					}
				}
			}
		})
	}
}

// noise returns n random runes: every code point class but NUL and
// surrogates, control characters and separators included.
func noise(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		var c rune
		switch r.IntN(4) {
		case 0:
			c = rune(1 + r.IntN(0x7f)) // ASCII, controls included
		case 1:
			c = rune(0x80 + r.IntN(0x780)) // C1 controls, Latin, …
		case 2:
			c = []rune{0x2028, 0x2029, 0x200b, 0x202e, 0xfeff, 0xfffd, 0xffff}[r.IntN(7)]
		default:
			c = rune(0x10000 + r.IntN(0x100000))
		}
		if utf8.ValidRune(c) {
			b.WriteRune(c)
		}
	}
	return b.String()
}
