package tree_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// nameRE is docs/protocol.md#the-shared-tree's rule for a channel or agent name, written
// independently of the code under test.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$`)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"simple", "codex", true},
		{"hyphen inside", "qc-1", true},
		{"hyphen at end", "qc-", true},
		{"underscore first", "_x", true},
		{"digits", "007", true},
		{"mixed case", "Agent_OS-paper", true},
		{"one char", "a", true},
		{"64 chars", strings.Repeat("a", 64), true},
		{"empty", "", false},
		{"65 chars", strings.Repeat("a", 65), false},
		{"leading hyphen", "-rf", false},
		{"lone hyphen", "-", false},
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"dot-file", ".hidden", false},
		{"inner dot", "a.b", false},
		{"slash", "a/b", false},
		{"climb", "../etc", false},
		{"absolute", "/etc", false},
		{"backslash", `a\b`, false},
		{"space", "a b", false},
		{"leading space", " a", false},
		{"trailing newline", "a\n", false},
		{"tab", "a\tb", false},
		{"NUL", "a\x00b", false},
		{"trailing NUL", "codex\x00", false},
		{"at sign", "@codex", false},
		{"glob", "a*", false},
		{"non-ASCII letter", "café", false},
		{"fullwidth letter", "ａ", false},
		{"64 chars then NUL", strings.Repeat("a", 64) + "\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tree.CheckName("agent", tt.in)
			if got := err == nil; got != tt.ok {
				t.Fatalf("CheckName(%q) = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if got := tree.ValidName(tt.in); got != tt.ok {
				t.Errorf("ValidName(%q) = %v, want %v", tt.in, got, tt.ok)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, tree.ErrBadName) {
				t.Errorf("CheckName(%q) = %v, want an error wrapping ErrBadName", tt.in, err)
			}
			if !strings.Contains(err.Error(), "agent") {
				t.Errorf("CheckName(%q) = %q, want the kind %q in the message", tt.in, err, "agent")
			}
		})
	}
}

func TestNameByte(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		want := nameRE.MatchString("a" + string([]byte{b}))
		if got := tree.NameByte(b); got != want {
			t.Errorf("NameByte(%q) = %v, want %v", b, got, want)
		}
	}
}

func FuzzCheckName(f *testing.F) {
	for _, s := range []string{
		"", "a", "qc-1", "qc-10", "-a", "..", ".", "a/b", "a b", "a\x00", "_",
		strings.Repeat("z", 64), strings.Repeat("z", 65), "é", "codex\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := tree.CheckName("channel", s)
		want := nameRE.MatchString(s)
		if got := err == nil; got != want {
			t.Fatalf("CheckName(%q) = %v, want ok=%v", s, err, want)
		}
		if got := tree.ValidName(s); got != want {
			t.Fatalf("ValidName(%q) = %v, want %v", s, got, want)
		}
		if err != nil && !errors.Is(err, tree.ErrBadName) {
			t.Fatalf("CheckName(%q) = %v, does not wrap ErrBadName", s, err)
		}
		if want {
			// A valid name is one path element that stays inside the root.
			root := tree.Root("/r")
			if got, want := root.Channel(s), "/r/channels/"+s; got != want {
				t.Fatalf("Channel(%q) = %q, want %q", s, got, want)
			}
		}
	})
}

func TestResolve(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "COLLAB_ROOT" {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name string
		flag string
		env  string
		want tree.Root
	}{
		{"flag wins", "/f", "/e", "/f"},
		{"env when no flag", "", "/e", "/e"},
		{"default", "", "", tree.DefaultRoot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tree.Resolve(tt.flag, env(tt.env)); got != tt.want {
				t.Errorf("Resolve(%q, COLLAB_ROOT=%q) = %q, want %q", tt.flag, tt.env, got, tt.want)
			}
		})
	}
}

func TestRootLayout(t *testing.T) {
	r := tree.Root("/srv/collab")
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"Channels", r.Channels(), "channels"},
		{"Channel", r.Channel("general"), "channels/general"},
		{"Presence", r.Presence(), "signals/presence"},
		{"Registry", r.Registry(), "registry/agents"},
		{"Logs", r.Logs(), "logs"},
		{"State", r.State("codex"), "state/codex"},
		{"States", r.States(), "state"},
		{"Outbox", r.Outbox("codex"), "state/codex/outbox"},
		{"Jobs", r.Jobs("codex"), "state/codex/jobs"},
		{"Inbox", r.Inbox("codex"), "state/codex/inbox"},
		{"Claims", r.Claims("general"), "claims/general"},
		{"AgentClaims", r.AgentClaims("general", "codex"), "claims/general/codex"},
		{"Archive", r.Archive("general"), "channels/general/archive"},
		{"ArchiveMonth", r.ArchiveMonth("general", time.Date(2026, 1, 31, 23, 0, 0, 0, time.FixedZone("east", 3*3600))), "channels/general/archive/2026-01"},
		{"ArchiveMonth in UTC", r.ArchiveMonth("general", time.Date(2026, 2, 1, 1, 0, 0, 0, time.FixedZone("east", 3*3600))), "channels/general/archive/2026-01"},
		{"Tasks", r.Tasks("general"), "tasks/general"},
		{"Docs", r.Docs("general"), "docs/general"},
		{"Scripts", r.Scripts(), "scripts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if want := filepath.Join("/srv/collab", tt.want); tt.got != want {
				t.Errorf("got %q, want %q", tt.got, want)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	real := t.TempDir()
	base := t.TempDir()
	link := filepath.Join(base, "collab")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(base, "dangling")
	if err := os.Symlink(filepath.Join(base, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	t.Chdir(base)
	tests := []struct {
		name, in, want string
	}{
		{"real", real, real},
		{"link", link, real},
		{"relative link", "collab", real},
		{"inside a link", filepath.Join(link, "x", ".."), real},
		{"missing below a link", filepath.Join(link, "a", "b"), filepath.Join(real, "a", "b")},
		// A dangling link is kept, for safedir to refuse: nothing is made
		// where it points.
		{"dangling link", dangling, dangling},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tree.Canonical(tt.in)
			if err != nil || string(got) != tt.want {
				t.Errorf("Canonical(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			if r := tree.Resolve(tt.in, func(string) string { return "" }); string(r) != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.in, r, tt.want)
			}
		})
	}
}

// TestCheckNameBadChar: the error shows the character it refuses, with its
// code point, not the first byte of its encoding.
func TestCheckNameBadChar(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"caf\u00e9", `'é' (U+00E9) at byte 3`},
		{"a\U0001F600", `'😀' (U+1F600) at byte 1`},
		{"a\x1b[2J", `'\x1b' (U+001B) at byte 1`},
		{"a b", `' ' (U+0020) at byte 1`},
		{"a\xffb", `byte 0xFF (not UTF-8) at byte 1`},
	} {
		err := tree.CheckName("agent", tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckName(%q) = %v; want it to say %s", tt.in, err, tt.want)
		}
	}
}

func TestPrintable(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"msg-1.json", "msg-1.json"},
		{"café ☕", "café ☕"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"\a\t\n\x7f", `\x07\x09\x0a\x7f`},
		{"c1 \u009b", `c1 \x9b`},
		{"bad \xff\xc3", `bad \xff\xc3`},
	} {
		if got := tree.Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
