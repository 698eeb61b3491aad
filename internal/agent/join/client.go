package join

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// hookInput is what Claude Code and Gemini CLI give a hook on its
// standard input (the fields used).
type hookInput struct {
	Event          string `json:"hook_event_name"`
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
}

// waits are Claude Code's events whose hook waits for messages (run as
// asyncRewake hooks).
var waits = map[string]bool{"SessionStart": true, "Stop": true}

// Hook is collab join-hook: a CLI's hook, run by the CLI with the event on
// stdin, that takes the session's queued messages through the socket at
// sock and hands them to the CLI as its hooks' protocol wants; it returns
// the exit status. With no joined session (sock empty or gone) it does
// nothing and exits 0: a hook must never break the person's CLI.
func Hook(ctx context.Context, cli, sock string, stdin io.Reader, stdout, stderr io.Writer) int {
	var in hookInput
	if err := json.NewDecoder(io.LimitReader(stdin, 16<<20)).Decode(&in); err != nil {
		fmt.Fprintf(stderr, "collab join-hook: %v\n", err)
		return 0
	}
	req := hookRequest{CLI: cli, Event: in.Event, SessionID: in.SessionID, TranscriptPath: in.TranscriptPath,
		Wait: cli == "claude" && waits[in.Event]}
	reply, ack, err := ask(ctx, sock, req)
	if err != nil || ack == nil {
		return 0
	}
	code := 0
	switch {
	case req.Wait:
		// asyncRewake: exit 2 wakes the model with standard error.
		fmt.Fprint(stderr, reply.Text)
		code = 2
	case cli == "gemini" && in.Event == "AfterAgent":
		json.NewEncoder(stdout).Encode(map[string]any{"decision": "block", "reason": reply.Text, "systemMessage": reply.Summary})
	case cli == "gemini":
		json.NewEncoder(stdout).Encode(map[string]any{"systemMessage": reply.Summary,
			"hookSpecificOutput": map[string]any{"hookEventName": in.Event, "additionalContext": reply.Text}})
	default:
		json.NewEncoder(stdout).Encode(map[string]any{
			"hookSpecificOutput": map[string]any{"hookEventName": in.Event, "additionalContext": reply.Text}})
	}
	ack()
	return code
}
