package watcher_test

import (
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestPromptNamesClaimedTasks: context recovery. A watcher's prompt names
// the tasks its agent has claimed in the message's channel, with the last
// checkpoint, so that an agent restarted mid-task picks up where it left
// off; a task it finished is not named.
func TestPromptNamesClaimedTasks(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	b, err := task.New(root, chName)
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"port the parser", "write the docs"} {
		if _, err := b.Add(task.NewTask{Title: title, By: "lead"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []func() (task.Task, error){
		func() (task.Task, error) { return b.Claim("t1", agent) },
		func() (task.Task, error) {
			return b.Record("t1", agent, task.Checkpoint{Type: task.CkProgress, Text: "lexer ported; the parser is next", Files: []string{"lex.go"}})
		},
		func() (task.Task, error) { return b.Claim("t2", agent) },
		func() (task.Task, error) { return b.Finish("t2", agent, "written") },
	} {
		if _, err := step(); err != nil {
			t.Fatal(err)
		}
	}
	r := &fakeRunner{}
	start(t, config(root, r))
	m := postAs(t, root, nil, channel.Message{To: agent, Content: channel.Content{Text: "where are you with the parser?"}})
	waitFor(t, "the CLI to run", func() bool { return len(r.callsFor(m.ID)) > 0 })
	p := r.callsFor(m.ID)[0].Req.Prompt
	for text, want := range map[string]bool{"- t1: port the parser": true, "> lexer ported; the parser is next": true, "files lex.go": true, "write the docs": false} {
		if got := strings.Contains(p, text); got != want {
			t.Errorf("prompt has %q: %v, want %v\n%s", text, got, want, p)
		}
	}
}
