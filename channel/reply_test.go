package channel_test

import (
	"testing"

	"github.com/collabdev/collab/channel"
)

func TestReply(t *testing.T) {
	tests := []struct {
		name               string
		parent             channel.Message
		wantTo, wantThread string
		wantHops           int
	}{
		{
			name:   "first message of a thread",
			parent: channel.Message{ID: "msg-1", SessionID: "dev", From: "alice", Metadata: channel.Metadata{Hops: 0}},
			wantTo: "alice", wantThread: "msg-1", wantHops: 1,
		},
		{
			name:   "deep in a thread",
			parent: channel.Message{ID: "msg-3", SessionID: "dev", From: "codex", Metadata: channel.Metadata{Hops: 4, InReplyTo: "msg-2", Thread: "msg-1"}},
			wantTo: "codex", wantThread: "msg-1", wantHops: 5,
		},
		{
			name:   "a foreign sender name",
			parent: channel.Message{ID: "msg-9", SessionID: "dev", From: "Bob Smith", Metadata: channel.Metadata{InReplyTo: "msg-8"}},
			wantTo: channel.Broadcast, wantThread: "msg-8", wantHops: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.parent.Reply("claude", "vm-1")
			if r.From != "claude" || r.Metadata.Turn != "claude" || r.Metadata.Host != "vm-1" || r.SessionID != tt.parent.SessionID {
				t.Errorf("reply = %+v: want from/turn claude, host vm-1, channel %s", r, tt.parent.SessionID)
			}
			if r.Metadata.Mode != channel.ModeWatcher || r.Type != "chat" {
				t.Errorf("mode %q type %q, want watcher chat", r.Metadata.Mode, r.Type)
			}
			if r.To != tt.wantTo || r.Metadata.InReplyTo != tt.parent.ID || r.Metadata.Thread != tt.wantThread || r.Metadata.Hops != tt.wantHops {
				t.Errorf("to %q in_reply_to %q thread %q hops %d; want %q %q %q %d",
					r.To, r.Metadata.InReplyTo, r.Metadata.Thread, r.Metadata.Hops, tt.wantTo, tt.parent.ID, tt.wantThread, tt.wantHops)
			}
		})
	}
}

func TestAwaitReply(t *testing.T) {
	m := channel.Message{From: "alice", Content: channel.Content{Text: "hi"}}
	if m.AwaitsReply() {
		t.Fatal("a new message awaits a reply")
	}
	m.SetAwaitReply()
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := channel.Decode(data, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !back.AwaitsReply() {
		t.Errorf("await_reply lost in %s", data)
	}
}
