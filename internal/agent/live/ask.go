package live

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

// Questions asked mid-turn: a CLI's permission request (Claude Code's
// can_use_tool control request, Codex's approval requests, ACP's
// session/request_permission) is put to the turn's modelcli.Request.Ask
// in a goroutine of its own, so that the session keeps reading the CLI
// (which may end the turn meanwhile), and the answer is written back as
// the CLI's protocol wants it. A turn without Ask, or whose Ask fails
// (no answer in time, the turn stopped), refuses.

// turnAsks runs one turn's questions.
type turnAsks struct {
	ctx    context.Context
	cancel context.CancelFunc
	ask    func(context.Context, modelcli.Question) (modelcli.Answer, error)
	wg     sync.WaitGroup
}

// newTurnAsks returns the questions of a turn run under ctx, answered by
// ask (nil: none is asked, every request is refused).
func newTurnAsks(ctx context.Context, ask func(context.Context, modelcli.Question) (modelcli.Answer, error)) *turnAsks {
	a := &turnAsks{ask: ask}
	a.ctx, a.cancel = context.WithCancel(ctx)
	return a
}

// asking reports whether questions are put to someone.
func (a *turnAsks) asking() bool { return a != nil && a.ask != nil }

// put asks q and calls reply with the answer (Allow false on an error),
// in a goroutine of its own.
func (a *turnAsks) put(q modelcli.Question, reply func(modelcli.Answer)) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ans, err := a.ask(a.ctx, q)
		if err != nil {
			ans = modelcli.Answer{Text: fmt.Sprintf("collab: no answer (%v)", err)}
		}
		reply(ans)
	}()
}

// close ends the questions still waiting (they are refused) and waits
// for their replies to be written.
func (a *turnAsks) close() {
	if a == nil {
		return
	}
	a.cancel()
	a.wg.Wait()
}

// refusalText is what a CLI is told when its request is refused: the
// person's words, or why nobody answered.
func refusalText(ans modelcli.Answer) string {
	if ans.Text == "" {
		return "The request was refused."
	}
	return "The request was refused: " + ans.Text
}

// toolQuestion words a permission request for a tool call: the CLI's
// name for the tool and what the call does (its description, else its
// command, else its input).
func toolQuestion(cli, tool, description string, input json.RawMessage) modelcli.Question {
	what := description
	if what == "" {
		var in struct {
			Command  any    `json:"command"`
			FilePath string `json:"file_path"`
		}
		json.Unmarshal(input, &in)
		switch c := in.Command.(type) {
		case string:
			what = c
		case []any:
			words := make([]string, len(c))
			for i, w := range c {
				words[i] = fmt.Sprint(w)
			}
			what = strings.Join(words, " ")
		}
		if what == "" {
			what = in.FilePath
		}
	}
	if what == "" && len(input) > 0 && string(input) != "null" {
		what = string(input)
	}
	text := fmt.Sprintf("%s asks to use %s", cli, tool)
	if what != "" {
		text += ": " + modelcli.Clip(what, 2000)
	}
	return modelcli.Question{Text: text, Options: modelcli.MidRunOptions}
}
