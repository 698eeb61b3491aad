package watcher

import (
	"context"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/prompt"
)

// LiveRunner runs a message as the next turn of the warm CLI process of
// its session key (collab watch --live; internal/agent/live's Pool). The
// request is the one Runner.Run would get; its Session is the CLI
// session a process started for the key resumes.
type LiveRunner interface {
	Turn(ctx context.Context, key string, req modelcli.Request) (modelcli.Response, error)
}

// A live session keeps its conversation, so the prompt of a later turn
// carries only what is new: the messages of the transcript after the one
// its last turn answered (the agent's own left out: the model wrote
// them), and the message to answer, in the followUp template. The whole
// prompt is kept for a run that cannot resume the session and starts
// afresh. The watcher remembers each key's last answered message while it
// runs; after a failure or a kill, the next turn gets the whole prompt.

// followUp is the prompt of a later turn of a live session.
var followUp = mustParse("live follow-up", `
{{- with .Transcript}}# New messages in #{{$.Channel}} since your last answer, oldest first
{{- range .}}

[{{time "2006-01-02 15:04:05" .Time}}] {{.Sender $.Agent}} → {{.To}}
{{- if and .Type (ne .Type "chat")}} ({{.Type}}){{end}}:
{{quote (clip 4096 .Content.Text)}}
{{- end}}

{{end -}}
# The next message to answer

From: {{.Message.Sender $.Agent}}
To: {{.Message.To}}
Time: {{time "2006-01-02 15:04:05" .Message.Time}}
ID: {{.Message.ID}}
{{- with .Message.Metadata.InReplyTo}}
In reply to: {{.}}
{{- end}}

{{fence (clip 65536 .Message.Content.Text)}}
{{- with .Message.Content.Code}}{{if trim .}}

Code attached to the message:

{{fence (clip 65536 .)}}
{{- end}}{{end}}

Answer as before: print only your reply to {{.Message.From}} (or {{.NoReply}}); the instructions of the first prompt still hold.
{{- with .Message.Metadata.Hops}} This message is {{.}} deep in an exchange between agents{{if $.MaxHops}}; at depth {{$.MaxHops}} no one answers{{end}}.{{end}}`)

func mustParse(name, text string) *prompt.Template {
	t, err := prompt.Parse(name, text)
	if err != nil {
		panic(err)
	}
	return t
}

// live reports whether the message of key runs as a live turn.
func (w *watcher) live(key string) bool { return w.cfg.Live != nil && key != "" }

// liveSince is the message the last turn of key's live session answered,
// when the next prompt may carry only what is new: the session is being
// resumed (or is warm) and this watcher answered that message in it.
func (w *watcher) liveSince(key, resume string) string {
	if !w.live(key) || resume == "" {
		return ""
	}
	return w.liveLast[key]
}

// liveDone remembers the message a live turn answered, or forgets the
// key's when the turn failed (the next prompt is then whole).
func (w *watcher) liveDone(j *job, r *jobResult) {
	if !w.live(j.key) {
		return
	}
	if w.liveLast == nil {
		w.liveLast = make(map[string]string)
	}
	if r.err != nil || j.killed || r.resp.Session == "" {
		delete(w.liveLast, j.key)
		return
	}
	w.liveLast[j.key] = r.it.msg.ID
}

// followUpPrompt renders d, the whole prompt's data, as a later turn's:
// the transcript from after message since, without the agent's own.
func followUpPrompt(d prompt.Data, since string) (string, error) {
	tr := d.Transcript
	for i, m := range tr {
		if m.ID == since {
			tr = tr[i+1:]
			break
		}
	}
	d.Transcript = nil
	for _, m := range tr {
		if m.From != d.Agent {
			d.Transcript = append(d.Transcript, m)
		}
	}
	return followUp.Render(d)
}
