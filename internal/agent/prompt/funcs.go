package prompt

import (
	"fmt"
	"strings"
	"text/template"
	"time"
)

// funcs are the functions a template can call besides text/template's
// built-ins; the package doc lists them.
var funcs = template.FuncMap{
	"trim":   strings.TrimSpace,
	"clip":   clip,
	"fence":  fence,
	"quote":  quote,
	"indent": indent,
	"time":   formatTime,
}

// clip cuts s to at most n bytes on a UTF-8 boundary and says how much was
// left out.
func clip(n int, s string) string {
	if len(s) <= n {
		return s
	}
	kept := cutUTF8(s, n)
	return fmt.Sprintf("%s\n[… %d more bytes not shown]", strings.TrimRight(kept, "\n"), len(s)-len(kept))
}

// fence returns s as a Markdown fenced code block whose fence is longer than
// any run of backticks in s, so that nothing in s can close it.
func fence(s string) string {
	f := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return f + "\n" + s + f
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// quote prefixes every line of s with "> " (">" for an empty line), so that
// no line of s can stand outside the quote.
func quote(s string) string {
	ls := lines(s)
	for i, l := range ls {
		if l == "" {
			ls[i] = ">"
		} else {
			ls[i] = "> " + l
		}
	}
	return strings.Join(ls, "\n")
}

// indent prefixes every non-empty line of s with n spaces.
func indent(n int, s string) string {
	pad := strings.Repeat(" ", min(max(n, 0), 100))
	ls := lines(s)
	for i, l := range ls {
		if l != "" {
			ls[i] = pad + l
		}
	}
	return strings.Join(ls, "\n")
}

// lines splits s into lines, taking \r\n and a lone \r as line ends too
// (Markdown does), without the empty line after a final line end.
func lines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func formatTime(layout string, t time.Time) string {
	return t.UTC().Format(layout)
}
