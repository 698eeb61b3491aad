package gemini_test

import (
	"fmt"

	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
)

// Parse turns a recorded stream into the reply and its events: the text
// chunks become one progress event per stretch.
func ExampleParse() {
	out := `{"type":"init","session_id":"a30dd4ec-aa10-4a09-95b1-0764a0bb3a4a","model":"gemini-2.5-pro"}
{"type":"message","role":"user","content":"Is the tree clean?"}
{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"git status"}}
{"type":"tool_result","tool_id":"t1","status":"success","output":"nothing to commit"}
{"type":"message","role":"assistant","content":"The tree","delta":true}
{"type":"message","role":"assistant","content":" is clean.","delta":true}
{"type":"result","status":"success","stats":{"total_tokens":1012,"input_tokens":1000,"output_tokens":12,"cached":0,"input":1000}}
`
	resp, err := gemini.Parse([]byte(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range resp.Events {
		fmt.Println(e.Kind, e.Tool, e.Text)
	}
	fmt.Printf("%q, session %s, %+v\n", resp.Text, resp.Session, resp.Usage)
	// Output:
	// started  a30dd4ec-aa10-4a09-95b1-0764a0bb3a4a
	// tool_call run_shell_command git status
	// progress  The tree is clean.
	// completed  The tree is clean.
	// "The tree is clean.", session a30dd4ec-aa10-4a09-95b1-0764a0bb3a4a, {Input:1000 Output:12 CacheRead:0 CacheWrite:0 Model:gemini-2.5-pro}
}
