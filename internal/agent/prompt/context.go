package prompt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/collabdev/collab/channel"
)

// The transcript's budget: what a prompt's context holds of the messages
// before the one answered, whatever the template. The message answered is
// not cut by it (the template clips it; the default at 64 KiB).
const (
	// ContextBytes bounds the text and code of all transcript messages
	// together; the newest messages are given room first.
	ContextBytes = 32 << 10
	// ContextMessageBytes bounds one transcript message's text and code,
	// each with its marker, so the default template's 4 KiB clip keeps
	// the marker.
	ContextMessageBytes = 4 << 10
)

// CutContext returns msgs (oldest first) with each message's text and code
// cut so that none holds more than ContextMessageBytes of them and all
// together hold at most ContextBytes, the newest first. A cut is marked at
// its end: "[… cut: N bytes, see message ID]", N being how many bytes of
// the message's text (or code) are left out. Cutting again keeps the count
// exact. msgs itself is not changed.
func CutContext(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	left := ContextBytes
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		room := min(ContextMessageBytes, left)
		m.Content.Text = cutMarked(m.Content.Text, room, m.ID)
		used := len(m.Content.Text)
		if m.Content.Code != nil {
			code := cutMarked(*m.Content.Code, max(room-used, 0), m.ID)
			m.Content.Code = &code
			used += len(code)
		}
		left = max(left-used, 0)
		out[i] = m
	}
	return out
}

// CutMessage returns m with its text and code cut to ContextMessageBytes
// each, marked as CutContext marks them: what a watcher keeps of a
// message it may show in a later prompt's context.
func CutMessage(m channel.Message) channel.Message {
	m.Content.Text = cutMarked(m.Content.Text, ContextMessageBytes, m.ID)
	if m.Content.Code != nil {
		code := cutMarked(*m.Content.Code, ContextMessageBytes, m.ID)
		m.Content.Code = &code
	}
	return m
}

const cutMark = "\n[… cut: "

// cutMarked cuts s to at most n bytes, its marker included. A marker
// already there (from an earlier cut of the same message) is counted in.
func cutMarked(s string, n int, id string) string {
	if len(s) <= n {
		return s
	}
	kept, cut := s, 0
	tail := " bytes, see message " + id + "]"
	if i := strings.LastIndex(s, cutMark); i >= 0 && strings.HasSuffix(s, tail) {
		if c, err := strconv.Atoi(s[i+len(cutMark) : len(s)-len(tail)]); err == nil && c >= 0 {
			kept, cut = s[:i], c
		}
	}
	// The marker's length depends on the count; allow for its widest.
	mark := fmt.Sprintf("%s%d%s", cutMark, cut+len(kept), tail)
	keep := max(n-len(mark), 0)
	k := cutUTF8(kept, keep)
	return k + fmt.Sprintf("%s%d%s", cutMark, cut+len(kept)-len(k), tail)
}
