package bridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/workspace/documents"
)

func docBody(t *testing.T, r DocRequest) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDoc: the doc op changes the files on the mount as the documents
// package does, a stale --if-version is a conflict with the current
// version, and bad names are refused.
func TestDoc(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{})
	var w DocReply
	if r := handle(t, s, OpDoc, "alice", docBody(t, DocRequest{Action: "create", Channel: "dev", File: "plan.md", Content: "one\n"}), &w); !r.OK || w.Version != documents.Version("one\n") {
		t.Fatalf("create: %+v %+v", r, w)
	}
	data, err := os.ReadFile(filepath.Join(e.root.Docs("dev"), "plan.md"))
	if err != nil || string(data) != "one\n" {
		t.Fatalf("on the mount: %q %v", data, err)
	}
	v1 := w.Version
	if r := handle(t, s, OpDoc, "bob", docBody(t, DocRequest{Action: "write", Channel: "dev", File: "plan.md", Content: "two\n", IfVersion: v1}), &w); !r.OK {
		t.Fatalf("write: %+v", r)
	}
	v2 := w.Version
	var c DocReply
	r := handle(t, s, OpDoc, "alice", docBody(t, DocRequest{Action: "write", Channel: "dev", File: "plan.md", Content: "three\n", IfVersion: v1}), &c)
	if r.OK || r.Code != CodeConflict || c.Version != v2 {
		t.Fatalf("stale write: %+v %+v, want conflict with version %s", r, c, v2)
	}
	if data, _ := os.ReadFile(filepath.Join(e.root.Docs("dev"), "plan.md")); string(data) != "two\n" {
		t.Fatalf("a refused write changed the file: %q", data)
	}
	if r := handle(t, s, OpDoc, "alice", docBody(t, DocRequest{Action: "create", Channel: "dev", File: "plan.md", Content: "x"}), &c); r.Code != CodeConflict || c.Version != v2 {
		t.Fatalf("create over a file: %+v %+v", r, c)
	}
	var rd DocReply
	if r := handle(t, s, OpDoc, "alice", docBody(t, DocRequest{Action: "read", Channel: "dev", File: "plan.md"}), &rd); !r.OK || rd.Doc == nil || rd.Doc.Content != "two\n" || rd.Doc.Version != v2 {
		t.Fatalf("read: %+v %+v", r, rd)
	}
	handle(t, s, OpDoc, "alice", docBody(t, DocRequest{Action: "append", Channel: "dev", Content: "note\n"}), nil)
	var ls DocReply
	if r := handle(t, s, OpDoc, "alice", docBody(t, DocRequest{Action: "list", Channel: "dev"}), &ls); !r.OK || len(ls.Entries) != 2 {
		t.Fatalf("list: %+v %+v", r, ls)
	}
	if r := handle(t, s, OpDoc, "alice", docBody(t, DocRequest{Action: "read", Channel: "dev", File: "gone.md"}), nil); r.Code != CodeNotFound {
		t.Fatalf("read a missing file: %+v", r)
	}
	for _, req := range []string{
		`{"action":"read","channel":"../x"}`,
		`{"action":"read","channel":"dev","file":"../../etc/passwd"}`,
		`{"action":"read","channel":"dev","file":"/etc/passwd"}`,
		`{"action":"read","channel":"dev","file":".hidden"}`,
		`{"action":"rm","channel":"dev"}`,
		`{"action":"create","channel":"dev"}`,
		`{"action":"append","channel":"dev","if_version":"x"}`,
		`{"action":"read","channel":"dev","content":"x"}`,
		`{"action":"list","channel":"dev","file":"a.md"}`,
		`{"action":"read","channel":"dev","author":"bob"}`,
	} {
		if r := handle(t, s, OpDoc, "alice", []byte(req), nil); r.Code != CodeInvalid {
			t.Errorf("%s: %+v, want invalid", req, r)
		}
	}
	// Too big for a reply: refused, read it on the mount.
	small := e.server(Config{MaxReply: 1024})
	handle(t, small, OpDoc, "alice", docBody(t, DocRequest{Action: "write", Channel: "dev", File: "big.md", Content: strings.Repeat("x", 2000)}), nil)
	if r := handle(t, small, OpDoc, "alice", docBody(t, DocRequest{Action: "read", Channel: "dev", File: "big.md"}), nil); r.Code != CodeInvalid || !strings.Contains(r.Error, "mount") {
		t.Fatalf("a big read: %+v", r)
	}
}
