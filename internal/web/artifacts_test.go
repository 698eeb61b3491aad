package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
)

// TestArtifactsShown: the API and the page show the files a message
// refers to (content.artifacts), escaped.
func TestArtifactsShown(t *testing.T) {
	ts := newTestServer(t, Config{})
	m := &channel.Message{SessionID: "dev", From: "codex", To: "all", Content: channel.Content{Text: "see",
		Artifacts: []json.RawMessage{json.RawMessage(`{"path":"/srv/<b>a.txt","size":6,"sha256":"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"}`), json.RawMessage(`"notes.md"`)}}}
	if err := (&channel.Writer{Root: ts.root}).Post(m); err != nil {
		t.Fatal(err)
	}
	code, body := ts.do(t, "GET", "/api/channels/dev/messages", "")
	if code != http.StatusOK || !strings.Contains(body, `"artifacts":[{"path":"/srv/\u003cb\u003ea.txt","size":6,"sha256":"5891b5b5`) || !strings.Contains(body, `{"path":"notes.md"}`) {
		t.Errorf("API: %d %s", code, body)
	}
	code, body = ts.do(t, "GET", "/c/dev", "")
	if code != http.StatusOK || !strings.Contains(body, "/srv/&lt;b&gt;a.txt (6 bytes, sha256 5891b5b522d5)") || !strings.Contains(body, ">notes.md</li>") {
		t.Errorf("page: %d, no artifacts in\n%s", code, body)
	}
}
