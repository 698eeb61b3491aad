// Package docs is collab's manual: the Markdown pages of this folder,
// embedded so that 'collab help TOPIC' prints a page wherever collab was
// installed. A topic is a page's name without ".md" (security, protocol).
package docs

import (
	"embed"
	"io/fs"
	"slices"
	"strings"
)

//go:embed *.md
var pages embed.FS

// Topics returns the pages' topics, sorted.
func Topics() []string {
	names, _ := fs.Glob(pages, "*.md") // the pattern is valid
	topics := make([]string, 0, len(names))
	for _, n := range names {
		topics = append(topics, strings.TrimSuffix(n, ".md"))
	}
	slices.Sort(topics)
	return topics
}

// Page returns topic's page, and whether there is one.
func Page(topic string) ([]byte, bool) {
	if !slices.Contains(Topics(), topic) {
		return nil, false
	}
	b, err := pages.ReadFile(topic + ".md")
	return b, err == nil
}
