package prompt

import (
	"strings"
	"testing"
	"time"
)

func TestFuncs(t *testing.T) {
	at := time.Date(2026, 1, 11, 17, 33, 15, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name, got, want string
	}{
		{"clip short", clip(10, "hello"), "hello"},
		{"clip exact", clip(5, "hello"), "hello"},
		{"clip ascii", clip(3, "hello"), "hel\n[… 2 more bytes not shown]"},
		{"clip mid rune", clip(3, "aéé"), "aé\n[… 2 more bytes not shown]"},
		{"clip in 4-byte rune", clip(3, "😀x"), "\n[… 5 more bytes not shown]"},
		{"clip negative", clip(-1, "ab"), "\n[… 2 more bytes not shown]"},
		{"clip trailing newline", clip(4, "abc\n\ndef"), "abc\n[… 4 more bytes not shown]"},
		{"fence", fence("x := 1"), "```\nx := 1\n```"},
		{"fence newline", fence("x\n"), "```\nx\n```"},
		{"fence empty", fence(""), "```\n```"},
		{"fence longer", fence("a ```` b `` c"), "`````\na ```` b `` c\n`````"},
		{"quote", quote("a\n\nb\n"), "> a\n>\n> b"},
		{"quote CR", quote("a\r\nb\rc"), "> a\n> b\n> c"},
		{"quote empty", quote(""), ">"},
		{"indent", indent(2, "a\n\n b"), "  a\n\n   b"},
		{"indent negative", indent(-3, "a"), "a"},
		{"time", formatTime("2006-01-02 15:04:05 MST", at), "2026-01-11 16:33:15 UTC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestFenceCannotBeClosed(t *testing.T) {
	for _, s := range []string{"```", "x\n```\ny", strings.Repeat("`", 12), "``` ````` ``"} {
		f := fence(s)
		open, _, _ := strings.Cut(f, "\n")
		if longestRun(s, '`') >= len(open) {
			t.Errorf("fence(%q) opens with %q", s, open)
		}
		if !strings.HasSuffix(f, "\n"+open) {
			t.Errorf("fence(%q) = %q does not close with its fence", s, f)
		}
	}
}
