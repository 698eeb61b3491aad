package live

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// TestRealAskMidTurn runs each real CLI live against fakemodel: the
// model runs a shell command that its permission mode puts to a person;
// the turn's Ask is asked once, and its answer decides, in the same
// process: allowed, the command runs and the turn carries on with its
// output; refused, it never runs and the turn still completes.
func TestRealAskMidTurn(t *testing.T) {
	for _, cli := range []struct {
		name string
		pool func(*testing.T) (*Pool, *fakemodel.Server, modelcli.Request)
	}{
		{"claude", realPool},
		{"codex", realCodexPool},
		{"gemini", realGeminiPool},
	} {
		for _, allow := range []bool{true, false} {
			name := cli.name + "/deny"
			if allow {
				name = cli.name + "/allow"
			}
			t.Run(name, func(t *testing.T) {
				p, s, req := cli.pool(t)
				marker := filepath.Join(t.TempDir(), "ran")
				s.Next(fakemodel.ShellAsking("touch " + marker + " && echo granted-42"))
				var mu sync.Mutex
				var asked []modelcli.Question
				req.Prompt = "Run it."
				req.Ask = func(ctx context.Context, q modelcli.Question) (modelcli.Answer, error) {
					mu.Lock()
					asked = append(asked, q)
					mu.Unlock()
					if allow {
						return modelcli.ParseAnswer("allow"), nil
					}
					return modelcli.ParseAnswer("not that one"), nil
				}
				var pids []int
				req.OnStart = func(pid int) { pids = append(pids, pid) }
				resp, err := p.Turn(context.Background(), "ch", req)
				if err != nil {
					t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(asked) != 1 || !strings.Contains(asked[0].Text, "touch "+marker) {
					t.Fatalf("asked %+v, want one question naming the command", asked)
				}
				_, statErr := os.Stat(marker)
				if ran := statErr == nil; ran != allow {
					t.Errorf("the command ran: %v, want %v", ran, allow)
				}
				if allow && !strings.Contains(resp.Text, "granted-42") {
					t.Errorf("text %q, want the command's output", resp.Text)
				}
				if resp.Question != nil {
					t.Errorf("question %+v after the turn, want none: it was asked", resp.Question)
				}
				// The same process takes the next turn.
				req.Prompt, req.Ask, req.Session = "Next.", nil, resp.Session
				if _, err := p.Turn(context.Background(), "ch", req); err != nil {
					t.Fatal(err)
				}
				if len(pids) != 2 || pids[0] != pids[1] {
					t.Errorf("pids %v, want one process for both turns", pids)
				}
			})
		}
	}
}
