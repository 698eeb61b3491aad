package service

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

// Transcript is m as collab read and collab run show it: its time,
// sender (then mark, the tag of a message that does not verify:
// signing.Verifier.Mark), addressee, type, id and what it answers; then
// its text, code and artifacts indented (indent), and a blank line.
func Transcript(m *channel.Message, mark string) string {
	var b strings.Builder
	if mark != "" {
		mark = " " + mark
	}
	ts := m.Time().Format("2006-01-02 15:04:05")
	fmt.Fprintf(&b, "%s  %s%s → %s", ts, tree.Printable(workflow.Display(m.From)), mark, tree.Printable(workflow.Display(m.To)))
	if m.Type != "" && m.Type != "chat" {
		fmt.Fprintf(&b, "  [%s]", tree.Printable(m.Type))
	}
	fmt.Fprintf(&b, "  %s", tree.Printable(m.ID))
	if m.Metadata.InReplyTo != "" {
		fmt.Fprintf(&b, "  (re %s)", tree.Printable(m.Metadata.InReplyTo))
	}
	b.WriteByte('\n')
	indent(&b, m.Content.Text)
	if m.Content.Code != nil && *m.Content.Code != "" {
		b.WriteString("  ```\n")
		indent(&b, *m.Content.Code)
		b.WriteString("  ```\n")
	}
	for _, a := range m.Content.ArtifactList() {
		indent(&b, "artifact: "+a.String())
	}
	b.WriteByte('\n')
	return b.String()
}

// InboxText is it as collab inbox prints it: its time, channel, sender,
// addressee, id and priority when high; then its text indented, and a
// blank line.
func InboxText(it inbox.Item) string {
	m := &it.Message
	var b strings.Builder
	fmt.Fprintf(&b, "%s  #%s  %s → %s  %s", m.Time().Format("2006-01-02 15:04:05"), it.Channel, tree.Printable(workflow.Display(m.From)), tree.Printable(workflow.Display(m.To)), tree.Printable(m.ID))
	if it.Priority == inbox.High {
		b.WriteString("  [high]")
	}
	b.WriteByte('\n')
	indent(&b, m.Content.Text)
	b.WriteByte('\n')
	return b.String()
}

// indent writes text indented by two spaces. Control characters other
// than tab are shown escaped: a message must not drive the terminal.
func indent(b *strings.Builder, text string) {
	b.Grow(len(text) + 2*strings.Count(text, "\n") + 3)
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString("  ")
		start := 0 // of the run of printable text not yet written
		for i, r := range line {
			if r == '\t' || r >= 0x20 && r < 0x7f || r > 0x9f && r != utf8.RuneError {
				continue
			}
			b.WriteString(line[start:i])
			if r == utf8.RuneError {
				b.WriteRune(r) // an invalid byte, or U+FFFD itself
			} else {
				fmt.Fprintf(b, "\\x%02x", r)
			}
			_, n := utf8.DecodeRuneInString(line[i:])
			start = i + n
		}
		b.WriteString(line[start:])
		b.WriteByte('\n')
	}
}
