// Package doccheck checks collab's Markdown documentation:
// every relative link in README.md and docs/*.md names a file of the
// repository, and every #anchor names a heading (or an explicit
// <a id="…">) of its target, with the anchors GitHub makes of headings.
//
// It reads inline links, [text](target), outside fenced code blocks and
// code spans; links with a scheme (https:, mailto:) are not followed.
package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// A Problem is one broken link.
type Problem struct {
	File   string // the file the link is in, relative to the root
	Line   int
	Target string
	Why    string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Target, p.Why)
}

// Files returns README.md and docs/*.md under root, relative to it.
func Files(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		files = append(files, rel)
	}
	return files, nil
}

// Check checks the links of files (relative to root).
func Check(root string, files []string) ([]Problem, error) {
	anchors := map[string][]string{} // file → its anchors, read once
	anchorsOf := func(rel string) ([]string, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		a := Anchors(string(data))
		anchors[rel] = a
		return a, nil
	}
	var problems []Problem
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, l := range Links(string(data)) {
			if p, bad := checkLink(root, f, l, anchorsOf); bad {
				problems = append(problems, p)
			}
		}
	}
	return problems, nil
}

func checkLink(root, file string, l Link, anchorsOf func(string) ([]string, error)) (Problem, bool) {
	bad := func(why string) (Problem, bool) {
		return Problem{File: file, Line: l.Line, Target: l.Target, Why: why}, true
	}
	path, frag, _ := strings.Cut(l.Target, "#")
	target := file
	if path != "" {
		target = filepath.Clean(filepath.Join(filepath.Dir(file), path))
		if strings.HasPrefix(target, "..") {
			return bad("outside the repository")
		}
		if _, err := os.Stat(filepath.Join(root, target)); err != nil {
			return bad("no such file")
		}
	}
	if frag == "" {
		return Problem{}, false
	}
	if !strings.HasSuffix(target, ".md") {
		return bad("an anchor into a file that is not Markdown")
	}
	a, err := anchorsOf(target)
	if err != nil {
		return bad(err.Error())
	}
	if !slices.Contains(a, frag) {
		return bad("no heading with this anchor in " + target)
	}
	return Problem{}, false
}

// A Link is an inline link's target and the line it is on.
type Link struct {
	Target string
	Line   int
}

var (
	linkRE = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	codeRE = regexp.MustCompile("`+[^`]*`+")
	idRE   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// Links returns the relative inline links of a Markdown text, outside
// code.
func Links(text string) []Link {
	var links []Link
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		if f, ok := fenceOf(line, fence); ok {
			fence = f
			continue
		}
		if fence != "" {
			continue
		}
		line = codeRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			t := m[1]
			if hasScheme(t) {
				continue
			}
			links = append(links, Link{Target: t, Line: i + 1})
		}
	}
	return links
}

// fenceOf reports whether line opens or closes a fenced code block, and
// the fence then open ("" after a close).
func fenceOf(line, open string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	for _, f := range []string{"```", "~~~"} {
		if !strings.HasPrefix(t, f) {
			continue
		}
		switch {
		case open == "":
			return f, true
		case open == f && strings.TrimSpace(strings.TrimLeft(t, f[:1])) == "":
			return "", true
		}
	}
	return open, false
}

func hasScheme(t string) bool {
	i := strings.Index(t, ":")
	return i > 0 && !strings.ContainsAny(t[:i], "/#.")
}

// Anchors returns the anchors of a Markdown text: its headings' as GitHub
// makes them (lower case, punctuation dropped, spaces to hyphens, -1, -2…
// on repeats) and explicit <a id="…">.
func Anchors(text string) []string {
	var anchors []string
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		if f, ok := fenceOf(line, fence); ok {
			fence = f
			continue
		}
		if fence != "" {
			continue
		}
		for _, m := range idRE.FindAllStringSubmatch(line, -1) {
			anchors = append(anchors, m[1])
		}
		h, ok := heading(line)
		if !ok {
			continue
		}
		s := Slug(h)
		if n := seen[s]; n > 0 {
			anchors = append(anchors, fmt.Sprintf("%s-%d", s, n))
		} else {
			anchors = append(anchors, s)
		}
		seen[s]++
	}
	return anchors
}

// heading returns an ATX heading's text.
func heading(line string) (string, bool) {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n == len(line) || line[n] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[n:]), "#")), true
}

// Slug is GitHub's anchor of a heading's text.
func Slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
