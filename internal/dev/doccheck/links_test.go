package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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

// TestCodeCitesProtocol: every citation of the protocol in a Go file
// (docs/protocol.md, a hash and a heading's anchor, and any ", #anchor"
// after it) names a heading of the protocol.
func TestCodeCitesProtocol(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	data, err := os.ReadFile(filepath.Join(root, "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := Anchors(string(data))
	cite := regexp.MustCompile(`docs/protocol\.md((?:,? ?#[a-z0-9_-]+)+)`)
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), "SPEC "+"§") {
			t.Errorf("%s cites the old SPEC; cite docs/protocol.md#ANCHOR", p)
		}
		for _, m := range cite.FindAllStringSubmatch(string(src), -1) {
			for _, a := range regexp.MustCompile(`#([a-z0-9_-]+)`).FindAllStringSubmatch(m[1], -1) {
				n++
				if !slices.Contains(anchors, a[1]) {
					t.Errorf("%s cites docs/protocol.md#%s: no such heading", p, a[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 30 {
		t.Errorf("found %d citations of docs/protocol.md in the code; the code cites it about 40 times", n)
	}
}
