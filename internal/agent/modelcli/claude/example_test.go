package claude_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
)

// Parse turns a recorded stream into the reply and its events.
func ExampleParse() {
	out := `{"type":"system","subtype":"init","session_id":"s-1","model":"claude-sonnet-4-5"}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"git status"}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"nothing to commit"}]}}
{"type":"assistant","message":{"content":[{"type":"text","text":"The tree is clean."}]}}
{"type":"result","subtype":"success","is_error":false,"result":"The tree is clean.","session_id":"s-1","total_cost_usd":0.012,"usage":{"input_tokens":900,"output_tokens":12},"permission_denials":[]}
`
	resp, err := claude.Parse([]byte(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range resp.Events {
		fmt.Println(e.Kind, e.Tool, e.Text)
	}
	fmt.Printf("%q, session %s, $%.3f, %d tokens in, %d out\n", resp.Text, resp.Session, resp.CostUSD, resp.Usage.Input, resp.Usage.Output)
	// Output:
	// started  s-1
	// tool_call Bash git status
	// progress  The tree is clean.
	// completed  The tree is clean.
	// "The tree is clean.", session s-1, $0.012, 900 tokens in, 12 out
}

// An unattended agent that may run git status and collab itself, and
// resumes the session of its previous answer.
func ExampleAdapter() {
	a := &claude.Adapter{
		Model:        "sonnet",
		AllowedTools: []string{"Bash(git status:*)", "Bash(collab send:*)"},
		MaxTurns:     30,
	}
	resp, err := a.Run(context.Background(), modelcli.Request{
		Prompt:  "Review the last commit.",
		Timeout: 10 * time.Minute,
		Session: "96bd95ef-87f2-4c95-9f0f-141abb1facd2",
		OnEvent: func(e modelcli.Event) { log.Println(e.Kind, e.Tool, e.Text) },
	})
	if err != nil {
		log.Fatal(err)
	}
	if resp.Question != nil {
		log.Println("asks:", resp.Question.Text, resp.Question.Options)
	}
	fmt.Println(resp.Text)
}
