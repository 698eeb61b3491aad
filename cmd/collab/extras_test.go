package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/tamper"
)

// TestReadJSONUnsignedExtras: read --json shows a signed message's
// fields outside its signature (host, needs_input, await_reply, unknown
// members) only as its sender signed them: added to the file afterwards,
// which leaves the message verified, they are all left out.
func TestReadJSONUnsignedExtras(t *testing.T) {
	host, _ := os.Hostname()
	tests := []struct {
		name     string
		edit     bool
		wantHost string
	}{
		{"as sent", false, host},
		{"fields added after signing", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			env := keyEnv(t, root)
			newKey(t, env, "alice")
			if r := runCollab(t, env, "", "send", "--agent", "alice", "--channel", "dev", "--to", "bob", "hello"); r.code != 0 {
				t.Fatalf("send: exit %d, stderr %q", r.code, r.stderr)
			}
			if tt.edit {
				m := onlyMessage(t, root, "dev")
				path := filepath.Join(tree.Root(root).Channel("dev"), m.File)
				tamper.JSON(t, path, func(top map[string]any) {
					md := top["metadata"].(map[string]any)
					md["host"] = "build-1"
					md["await_reply"] = true
					md["needs_input"] = map[string]any{"job": "job-1", "options": []string{"allow"}}
					top["priority"] = "urgent"
				})
			}
			r := runCollab(t, env, "", "read", "--channel", "dev", "--json")
			var got struct {
				Verdict  string
				Priority *string
				Metadata struct {
					Host       string
					AwaitReply *bool           `json:"await_reply"`
					NeedsInput json.RawMessage `json:"needs_input"`
				}
			}
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
				t.Fatalf("read --json: exit %d, %q (%v), stderr %q", r.code, r.stdout, err, r.stderr)
			}
			if got.Verdict != "verified" {
				t.Errorf("verdict %q, want verified", got.Verdict)
			}
			if got.Metadata.Host != tt.wantHost || got.Metadata.AwaitReply != nil || got.Metadata.NeedsInput != nil || got.Priority != nil {
				t.Errorf("read --json shows fields the sender did not sign: %s", strings.TrimSpace(r.stdout))
			}
		})
	}
}
