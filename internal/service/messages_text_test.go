package service_test

import (
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

// TestTranscript: a transcript entry names the sender (then the mark of
// a message that does not verify), the addressee, a type other than
// chat, the id and what it answers; its text and code are indented with
// tabs kept, other control characters escaped and a byte that is not
// UTF-8 shown as U+FFFD, so that no message drives the terminal.
func TestTranscript(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	code := "x := 1\n"
	m := &channel.Message{ID: "msg-1", Timestamp: at.UTC().Format(time.RFC3339Nano), From: "alice", To: "bob", Type: "task_assign",
		Content:  channel.Content{Text: "hi\tthere\x1b[31m\xff\n", Code: &code},
		Metadata: channel.Metadata{InReplyTo: "msg-0"}}
	want := "2026-01-02 03:04:05  alice (unsigned) → bob  [task_assign]  msg-1  (re msg-0)\n" +
		"  hi\tthere\\x1b[31m\uFFFD\n  ```\n  x := 1\n  ```\n\n"
	if got := service.Transcript(m, "(unsigned)"); got != want {
		t.Errorf("Transcript =\n%q, want\n%q", got, want)
	}
	m.Type, m.Content.Code, m.Metadata.InReplyTo = "chat", nil, ""
	if got, want := service.Transcript(m, ""), "2026-01-02 03:04:05  alice → bob  msg-1\n  hi\tthere\\x1b[31m\uFFFD\n\n"; got != want {
		t.Errorf("Transcript of a chat =\n%q, want\n%q", got, want)
	}
	it := inbox.Item{Channel: "dev", Priority: inbox.High, Message: *m}
	if got, want := service.InboxText(it), "2026-01-02 03:04:05  #dev  alice → bob  msg-1  [high]\n  hi\tthere\\x1b[31m\uFFFD\n\n"; got != want {
		t.Errorf("InboxText =\n%q, want\n%q", got, want)
	}
}
