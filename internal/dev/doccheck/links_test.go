package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepositoryDocs is the check itself: every link of README.md and
// docs/*.md resolves.
func TestRepositoryDocs(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found only %v: is docs/ there?", files)
	}
	problems, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestCheckFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Join([]string{
		"# Top",
		"[ok](docs/a.md#the-a-part) [ok](#top) [ok](https://example.com/x#y) [ok](Makefile)",
		"[gone](docs/nosuch.md) [no anchor](docs/a.md#nope) [self](#nope2)",
		"`[code](docs/nosuch.md)` and",
		"```",
		"[fenced](docs/nosuch.md)",
		"```",
		"[out](../../etc/passwd)",
	}, "\n"))
	write("Makefile", "")
	write("docs/a.md", "# A\n## The `a` part\n## Again\n## Again\n[back](../README.md#top) [dup](#again-1) [bad dup](#again-2)\n")
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.Target)
	}
	want := []string{"docs/nosuch.md", "docs/a.md#nope", "#nope2", "../../etc/passwd", "#again-2"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("problems %v, want %v", got, want)
	}
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"NATS: the fast path (optional)":          "nats-the-fast-path-optional",
		"`collab send`":                           "collab-send",
		"Real agents: Claude Code, Codex, Gemini": "real-agents-claude-code-codex-gemini",
		"Hosts without the mount":                 "hosts-without-the-mount",
		"What `--json` prints: a_b":               "what---json-prints-a_b",
	} {
		if got := Slug(h); got != want {
			t.Errorf("Slug(%q) = %q, want %q", h, got, want)
		}
	}
}

func FuzzLinks(f *testing.F) {
	f.Add("# a\n[x](y.md#z)\n```\n[q](r)\n```\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range Links(s) {
			if hasScheme(l.Target) || l.Line < 1 {
				t.Fatalf("bad link %+v", l)
			}
		}
		Anchors(s)
	})
}
