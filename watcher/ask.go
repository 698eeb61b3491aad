package watcher

// Questions asked mid-run (collab watch --live): a live turn whose CLI
// asks for permission (Claude Code's can_use_tool, Codex's approval
// requests, ACP's session/request_permission) waits in its goroutine
// while the loop posts the question to the channel, marks the job
// awaiting_input, and hands it the asker's answer when it comes, or a
// refusal after Config.QuestionTimeout. The turn's --timeout does not run
// while it waits: a person's time to answer is not the CLI's time.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/presence"
)

// asking is one question a running turn waits on.
type asking struct {
	q      modelcli.Question
	answer chan modelcli.Answer // buffered: the loop never waits on it
	gone   <-chan struct{}      // closed when the turn stopped waiting (its context ended)

	// Set by the loop once the question is posted.
	id      string      // the question's message id
	at      time.Time   // its time, as posted
	expires *time.Timer // Config.QuestionTimeout
}

// asker returns the Ask of a live turn: it hands the question to the loop
// and waits for the answer, with the turn's timeout d paused meanwhile.
func (w *watcher) asker(d *pausable) func(context.Context, modelcli.Question) (modelcli.Answer, error) {
	return func(ctx context.Context, q modelcli.Question) (modelcli.Answer, error) {
		a := &asking{q: q, answer: make(chan modelcli.Answer, 1), gone: ctx.Done()}
		d.pause()
		defer d.resume()
		select {
		case w.asks <- a:
		case <-ctx.Done():
			return modelcli.Answer{}, context.Cause(ctx)
		}
		select {
		case ans := <-a.answer:
			return ans, nil
		case <-ctx.Done():
			return modelcli.Answer{}, context.Cause(ctx)
		}
	}
}

// asked posts the question of the running job's turn and waits for its
// asker's answer; one that cannot be posted, or comes while another waits,
// is refused at once.
func (w *watcher) asked(a *asking) {
	j := w.busy
	if j != nil && j.asking != nil && closed(j.asking.gone) {
		// The turn that asked stopped waiting (its process died and the
		// turn is run again): its question is void.
		j.asking.expires.Stop()
		j.asking = nil
	}
	if j == nil || j.asking != nil {
		a.answer <- modelcli.Answer{Text: "collab: another question is waiting for an answer"}
		return
	}
	m := &j.it.msg
	q := w.question(j, a.q)
	if err := w.postFile(&q); err != nil {
		w.log.Error("cannot post the question; refused", keyMsg, m.ID, keyJob, j.id, keyErr, err)
		a.answer <- modelcli.Answer{Text: "collab: the question could not be put to " + m.From}
		return
	}
	a.id, a.at = q.ID, q.Time()
	a.expires = time.NewTimer(w.cfg.QuestionTimeout)
	j.asking = a
	asked := a.q
	j.rec.Update(func(jb *jobs.Job) { jb.Status, jb.Question, jb.Asked = jobs.AwaitingInput, &asked, q.ID })
	j.rec.Event(modelcli.Event{Kind: modelcli.EventNeedsInput, Text: a.q.Text, Data: jsonString(q.ID)})
	w.setPresence(presence.SubWaiting, m.ID)
	w.log.Info("asked mid-run", keyMsg, m.ID, keyJob, j.id, keyReply, q.ID, keyAsker, m.From)
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// question is the message that puts q to the asker: in reply to the
// message the job answers, of type question (so no wait takes it for the
// answer), with the needs_input extension.
func (w *watcher) question(j *job, q modelcli.Question) channel.Message {
	m := &j.it.msg
	r := m.Reply(w.cfg.Agent, w.cfg.Host)
	r.Type = channel.TypeQuestion
	r.ID = channel.NewID(w.cfg.Agent, w.now(), randhex.String(2)) // named in its text
	r.Content.Text = fmt.Sprintf("%s\n\nReply with one of: %s (allow for the rest of this conversation), or deny (any other reply refuses, and is passed to the model as the reason), within %s; then it is refused. For example: collab send --to %s --in-reply-to %s allow",
		q.Text, strings.Join(modelcli.MidRunOptions[:2], ", "), w.cfg.QuestionTimeout, w.cfg.Agent, r.ID)
	r.SetExtension(extNeedsInput, mustJSON(struct {
		Job     string   `json:"job"`
		Options []string `json:"options"`
		Live    bool     `json:"live"`
	}{j.id, modelcli.MidRunOptions, true}))
	return r
}

// askExpiry is the running question's timer; nil (never ready) without one.
func (w *watcher) askExpiry() <-chan time.Time {
	if w.busy == nil || w.busy.asking == nil {
		return nil
	}
	return w.busy.asking.expires.C
}

// askExpired refuses the question nobody answered in time.
func (w *watcher) askExpired() {
	j := w.busy
	why := fmt.Sprintf("no answer within %s", w.cfg.QuestionTimeout)
	w.log.Warn("question unanswered; refused", keyMsg, j.it.msg.ID, keyJob, j.id, keyReply, j.asking.id, keyReason, why)
	w.answerAsking(j, modelcli.Answer{Text: "collab: " + why + "; refused"}, why)
}

// takeAnswers looks in the queue for the answer to the running job's
// question: the asker's next message in the job's session key, after the
// question, that verifies as the asker's by the trust policy. It is
// claimed, given to the turn, and its claim finished as skipped (the
// turn's reply answers the message that asked).
func (w *watcher) takeAnswers(now time.Time) {
	for w.busy != nil && w.busy.asking != nil {
		j := w.busy
		m := &j.it.msg
		i := slices.IndexFunc(w.queue, func(it *item) bool {
			a := &it.msg
			return a.From == m.From && !it.notAnswer && w.sess.key(a.SessionID, a.ThreadID()) == j.key &&
				(a.Metadata.InReplyTo == j.asking.id || after(a, j.asking.id, j.asking.at))
		})
		if i < 0 {
			return
		}
		it := w.queue[i]
		if !w.answerTrusted(it, m.From) {
			w.log.Warn("not taken as the answer: it does not verify as the asker", keyMsg, it.msg.ID, keyJob, j.id, keyAsker, m.From, keyVerdict, it.verdict.String())
			it.notAnswer = true
			continue
		}
		if !w.claimItem(i, now) {
			it.notAnswer = true // held or done elsewhere: not this turn's
			continue
		}
		text := it.msg.Content.Text
		w.finishClaim(it, claim.Skipped, "", "the answer to "+j.asking.id+", asked by job "+j.id)
		w.answerAsking(j, modelcli.ParseAnswer(text), "")
		j.rec.Event(modelcli.Event{Kind: modelcli.EventInputSent, Text: text, Data: jsonString(it.msg.ID)})
		w.log.Info("answer given to the running turn", keyMsg, it.msg.ID, keyJob, j.id, keyAllow, modelcli.ParseAnswer(text).Allow)
	}
}

// answerAsking gives the running question its answer (why, if set, is
// the refusal the watcher made) and puts the job back to running.
func (w *watcher) answerAsking(j *job, ans modelcli.Answer, why string) {
	a := j.asking
	j.asking = nil
	a.expires.Stop()
	a.answer <- ans
	j.rec.Update(func(jb *jobs.Job) { jb.Status, jb.Question = jobs.Running, nil })
	if why != "" {
		j.rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: "question " + a.id + " refused: " + why})
	}
	w.setPresence(presence.SubWorking, j.it.msg.ID)
}

// pausable is a turn's timeout that stops while the turn waits for an
// answer: its context ends with proc.ErrTimeout once the turn has run d
// without waiting.
type pausable struct {
	mu     sync.Mutex
	d      time.Duration
	t      *time.Timer // nil without a timeout
	end    time.Time
	left   time.Duration
	paused int
}

// withPausable returns ctx bounded by the pausable timeout d (none if d
// ≤ 0); stop releases it.
func withPausable(ctx context.Context, d time.Duration) (_ context.Context, _ *pausable, stop func()) {
	p := &pausable{d: d}
	if d <= 0 {
		return ctx, p, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	p.end = time.Now().Add(d)
	p.t = time.AfterFunc(d, func() { cancel(fmt.Errorf("%w after %v", proc.ErrTimeout, d)) })
	return ctx, p, func() { p.t.Stop(); cancel(nil) }
}

func (p *pausable) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused++; p.paused == 1 && p.t != nil && p.t.Stop() {
		p.left = max(time.Until(p.end), time.Millisecond)
	}
}

func (p *pausable) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused--; p.paused == 0 && p.t != nil && p.left > 0 {
		p.end = time.Now().Add(p.left)
		p.t.Reset(p.left)
		p.left = 0
	}
}
