package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestAPIJobsAgentAddress: the page's job API names an instance agent
// NAME@INSTANCE (or by its id), one rule with the CLI's and MCP's.
func TestAPIJobsAgentAddress(t *testing.T) {
	ts := newTestServer(t, Config{})
	run := startJob(t, ts.root, "coder--i1", "one")
	for _, agent := range []string{"coder@i1", "coder--i1"} {
		code, body := ts.do(t, "GET", "/api/agents/"+agent+"/jobs", "")
		var list struct{ Jobs []JobView }
		if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Jobs) != 1 || list.Jobs[0].ID != run.Job().ID {
			t.Errorf("jobs of %s: %d %s", agent, code, body)
		}
		if code, body := ts.do(t, "GET", "/api/agents/"+agent+"/jobs/"+run.Job().ID, ""); code != 200 || !strings.Contains(body, run.Job().ID) {
			t.Errorf("job of %s: %d %s", agent, code, body)
		}
	}
	if code, body := ts.do(t, "GET", "/api/agents/@i1/jobs", ""); code != http.StatusNotFound {
		t.Errorf("jobs of @i1: %d %s, want 404", code, body)
	}
}
