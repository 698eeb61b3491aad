package bridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
)

// TestReadForeignIDs: a foreign writer's file without an "id", or with an
// id of its own, is returned by read with the id of its file, the one a
// remote reader pages with and files the message under.
func TestReadForeignIDs(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	dir := e.root.Channel("dev")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := time.Now().UTC().Add(-time.Minute)
	files := map[string]string{
		channel.NewID("py", base, "0001"):                  `{"from":"py","content":{"text":"no id"}}`,
		channel.NewID("py", base.Add(time.Second), "0002"): `{"id":"py-42","from":"py","content":{"text":"an id of its own"}}`,
	}
	for id, data := range files {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, after := range []string{"", channel.NewID("a", base.Add(-time.Hour), "0000")} {
		b, _ := json.Marshal(ReadRequest{Channel: "dev", After: after})
		var rep ReadReply
		if r := handle(t, s, OpRead, "alice", b, &rep); !r.OK {
			t.Fatalf("read: %+v", r)
		}
		if len(rep.Messages) != 2 {
			t.Fatalf("after %q: %s", after, rep.Messages)
		}
		for _, raw := range rep.Messages {
			m, err := channel.Decode(raw, "", "dev")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := files[m.ID]; !ok {
				t.Fatalf("after %q: a message returned with id %q, not its file's: %s", after, m.ID, raw)
			}
		}
	}
}

// TestReadSince: a read with since returns the newest limit messages
// after a message id or a time, as MCP's channel_read does on the mount,
// with more when older ones after the point were left out; a since that
// is neither, or since with after, is invalid.
func TestReadSince(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	base, ids := postMinutes(t, e, "x")
	for _, c := range []struct {
		since string
		limit int
		want  []string
		more  bool
	}{
		{ids[2], 10, ids[3:], false},
		{ids[2], 2, ids[4:], true},
		{base.Add(3*time.Minute + time.Second).Format(time.RFC3339), 10, ids[4:], false},
		{ids[2], 3, ids[3:], false}, // exactly what is there: no more
		{"", 2, ids[4:], true},
		{"", 6, ids, false},
	} {
		got, more := readIDs(t, s, ReadRequest{Channel: "dev", Since: c.since, Limit: c.limit})
		if !slices.Equal(got, c.want) || more != c.more {
			t.Errorf("since %q limit %d: %q more %v; want %q more %v", c.since, c.limit, got, more, c.want, c.more)
		}
	}
	for _, req := range []ReadRequest{{Channel: "dev", Since: "yesterday"}, {Channel: "dev", Since: ids[0], After: ids[0]}} {
		b, _ := json.Marshal(req)
		if r := handle(t, s, OpRead, "alice", b, nil); r.OK || r.Code != CodeInvalid {
			t.Errorf("%+v: %+v; want invalid", req, r)
		}
	}
}

// TestReadNewestCutKeepsNewest: a read of the newest that does not fit in
// one reply keeps the newest messages, says more, and pages after an id
// keep the oldest.
func TestReadNewestCutKeepsNewest(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{MaxReply: 8 << 10})
	_, ids := postMinutes(t, e, strings.Repeat("x", 3000))
	for _, req := range []ReadRequest{{Channel: "dev"}, {Channel: "dev", Since: ids[0]}} {
		got, more := readIDs(t, s, req)
		if len(got) == 0 || got[len(got)-1] != ids[5] || !more || !slices.IsSorted(got) {
			t.Errorf("%+v: %q more %v; want the newest, in order, and more", req, got, more)
		}
	}
	got, more := readIDs(t, s, ReadRequest{Channel: "dev", After: ids[0]})
	if len(got) == 0 || got[0] != ids[1] || !more {
		t.Errorf("after %s: %q more %v; want the oldest after it, and more", ids[0], got, more)
	}
}

// postMinutes posts six messages of text in dev, a minute apart from an
// hour ago, and returns the first's time and their ids.
func postMinutes(t *testing.T, e *env, text string) (time.Time, []string) {
	t.Helper()
	w := channel.Writer{Root: e.root}
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var ids []string
	for i := range 6 {
		at := base.Add(time.Duration(i) * time.Minute)
		w.Now = func() time.Time { return at }
		m := &channel.Message{SessionID: "dev", From: "m", Content: channel.Content{Text: text}}
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	return base, ids
}

// readIDs performs req as alice and returns the ids of the messages read
// and the reply's more.
func readIDs(t *testing.T, s *Server, req ReadRequest) ([]string, bool) {
	t.Helper()
	b, _ := json.Marshal(req)
	var rep ReadReply
	if r := handle(t, s, OpRead, "alice", b, &rep); !r.OK {
		t.Fatalf("%+v: %+v", req, r)
	}
	var got []string
	for _, raw := range rep.Messages {
		m, err := channel.Decode(raw, "", "dev")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.ID)
	}
	return got, rep.More
}
