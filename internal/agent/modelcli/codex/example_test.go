package codex_test

import (
	"fmt"

	"github.com/collabdev/collab/internal/agent/modelcli/codex"
)

// Parse turns a recorded stream into the reply and its events.
func ExampleParse() {
	out := `{"type":"thread.started","thread_id":"01a2018f-7a29-7411-a474-d826ea82ed17"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'git status'","status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'git status'","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"The tree is clean."}}
{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":600,"output_tokens":12}}
`
	resp, err := codex.Parse([]byte(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range resp.Events {
		fmt.Println(e.Kind, e.Tool, e.Text)
	}
	fmt.Printf("%q, thread %s, %+v\n", resp.Text, resp.Session, resp.Usage)
	// Output:
	// started  01a2018f-7a29-7411-a474-d826ea82ed17
	// tool_call command_execution /bin/bash -lc 'git status'
	// progress  The tree is clean.
	// completed  The tree is clean.
	// "The tree is clean.", thread 01a2018f-7a29-7411-a474-d826ea82ed17, {Input:400 Output:12 CacheRead:600 CacheWrite:0 Model:}
}
