package natsbus_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

func TestDecode(t *testing.T) {
	const id = "msg-20260111-163315-claude-4c78"
	full := `{"id":"` + id + `","timestamp":"2026-01-11T16:33:15.123Z","session_id":"room","from":"claude","to":"codex","type":"chat","content":{"text":"hi","code":null,"artifacts":[]},"metadata":{"mode":"chat","turn":"claude","in_reply_to":null,"hops":0}}`
	hdr := func(id string) map[string][]string { return map[string][]string{natsbus.MsgIDHeader: {id}} }
	tests := []struct {
		name    string
		subject string
		header  map[string][]string
		data    string
		wantID  string // the file id (Key); empty: rejected
	}{
		{"full", "collab.chat.room", hdr(id), full, id},
		{"no header", "collab.chat.room", nil, full, id},
		{"header is the file id", "collab.chat.room", hdr("msg-20260111-163315-claude-0001"), full, "msg-20260111-163315-claude-0001"},
		{"minimal with header", "collab.chat.room", hdr(id), `{"from":"x","content":{"text":"t"}}`, id},
		{"minimal without id", "collab.chat.room", nil, `{"from":"x","content":{"text":"t"}}`, ""},
		{"bad header id", "collab.chat.room", hdr("../../etc/passwd"), full, ""},
		{"other channel", "collab.chat.other", hdr(id), full, ""},
		{"not a chat subject", "collab.presence.room", hdr(id), full, ""},
		{"wildcard subject", "collab.chat.>", hdr(id), full, ""},
		{"not json", "collab.chat.room", hdr(id), `hello`, ""},
		{"no from", "collab.chat.room", hdr(id), `{"content":{"text":"t"}}`, ""},
		{"too large", "collab.chat.room", hdr(id), `{"from":"x","content":{"text":"` + strings.Repeat("a", channel.MaxMessageSize) + `"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := natsbus.Decode(tt.subject, tt.header, []byte(tt.data))
			if tt.wantID == "" {
				if !errors.Is(err, natsbus.ErrRejected) {
					t.Errorf("got %+v, %v; want ErrRejected", m, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Key() != tt.wantID || m.SessionID != "room" || m.ID == "" {
				t.Errorf("got key %q, id %q, channel %q; want key %q in room", m.Key(), m.ID, m.SessionID, tt.wantID)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("collab.chat.room", "msg-20260111-163315-claude-4c78", []byte(`{"from":"x","content":{"text":"t"}}`))
	f.Add("collab.chat.room", "", []byte(`{"id":"msg-20260111-163315-claude-4c78","from":"x","session_id":"room","content":{"text":"t"}}`))
	f.Add("collab.chat.a.b", "x", []byte(`{}`))
	f.Fuzz(func(t *testing.T, subject, id string, data []byte) {
		var hdr map[string][]string
		if id != "" {
			hdr = map[string][]string{natsbus.MsgIDHeader: {id}}
		}
		m, err := natsbus.Decode(subject, hdr, data)
		if err != nil {
			if !errors.Is(err, natsbus.ErrRejected) {
				t.Errorf("error %v does not wrap ErrRejected", err)
			}
			return
		}
		// What is accepted names a valid file in a valid channel.
		if !tree.ValidName(m.SessionID) || subject != natsbus.ChatSubject(m.SessionID) {
			t.Errorf("channel %q from subject %q", m.SessionID, subject)
		}
		if _, err := channel.ParseName(m.File); err != nil || strings.ContainsAny(m.File, "/\x00") {
			t.Errorf("file %q: %v", m.File, err)
		}
		if m.From == "" {
			t.Error("no from")
		}
	})
}
