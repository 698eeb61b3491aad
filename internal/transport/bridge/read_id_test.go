package bridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"collab/channel"
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
