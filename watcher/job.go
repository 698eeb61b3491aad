package watcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/prompt"
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// A job is one CLI run on one claimed message: the loop starts it (start),
// its goroutine builds the prompt and runs the CLI (run), and the loop
// records its launch (launched) and its end (finish), which posts the
// reply, or the question the CLI asked, or records the failure.

// extNeedsInput is the extension of a reply that asks the sender a
// question: {"job": …, "options": […], "allow": […]}.
const extNeedsInput = "needs_input"

// errKilled is the error of a job stopped at someone's request.
var errKilled = errors.New("watcher: killed by request")

// job is the CLI run in progress.
type job struct {
	it      item
	id      string // the job id
	started time.Time
	stop    context.CancelFunc // stops this run alone
	rec     *jobs.Recorder     // nil if the record cannot be written
	key     string             // session key
	killed  bool               // stopped at someone's request
	lost    bool               // stopped: its claim was taken over

	// launching is closed by the job's goroutine as it starts the CLI
	// (and writes WORKING presence alongside); until then (launched false)
	// the record and state wait, so that only the claim stands between a
	// message and its CLI.
	launching chan struct{}
	launched  bool
	answers   string   // the job that asked the question this run answers
	allow     []string // permission rules the answer granted, for this run only
	asking    *asking  // the question its live turn waits on, if any
}

// runRequest is all a job's goroutine needs to run the CLI once: run
// touches no watcher state.
type runRequest struct {
	it     item
	key    string         // the session key
	resume string         // the CLI session to resume; "" for a new one
	since  string         // live: the prompt carries what is new after this message
	full   string         // live: the whole prompt, for a run that starts afresh
	allow  []string       // permission rules granted to this run alone
	rec    *jobs.Recorder // the job's record

	// transcript is the prompt's context from the watcher's memory, unless
	// readTranscript: memory did not hold it all, and run reads it from
	// the channel's folder.
	transcript     []channel.Message
	readTranscript bool

	launching chan struct{}   // closed just before the CLI starts
	working   presence.Status // written while the CLI starts
	traceEnv  []string        // TRACEPARENT of the message's hop (trace.go)
}

// jobResult is what a job's goroutine hands back to the loop.
type jobResult struct {
	it    item
	resp  modelcli.Response
	err   error
	fresh bool // a resume was refused and the run started afresh

	presenceErr error // writing WORKING presence as the CLI started
}

// start runs the CLI in a goroutine of its own. The message is claimed:
// that is all exactness needs before the CLI starts. WORKING presence is
// written by the goroutine while the CLI starts; the job record and the
// state once the goroutine says the CLI is starting (launched), or at the
// latest when it ends (finish).
func (w *watcher) start(jobCtx context.Context, it *item, now time.Time) {
	m := &it.msg
	key := w.sess.key(m.SessionID, m.ThreadID())
	resume := w.sess.get(key, now)
	id := jobs.NewID()
	rec, err := jobs.Prepare(w.cfg.Root, jobs.Job{
		ID: id, Agent: w.cfg.Agent, Host: w.cfg.Host, Channel: m.SessionID,
		Message: m.Key(), From: m.From, CLI: w.cfg.CLI, Session: resume, Resumed: resume != "", Started: now,
		Instance: w.instance, WatcherPID: w.claims.Self.PID, Boot: w.claims.Self.BootID,
	}, w.cfg.Now)
	if err != nil {
		w.logOnce("job", "cannot record the job", keyMsg, m.ID, keyErr, err)
	}
	ctx, stop := context.WithCancel(jobCtx)
	j := &job{it: *it, id: id, started: now, stop: stop, rec: rec, key: key, launching: make(chan struct{})}
	w.takeAnswer(j)
	req := runRequest{it: *it, key: key, resume: resume, since: w.liveSince(key, resume), allow: j.allow, rec: rec, launching: j.launching}
	req.traceEnv = w.hopEnv(it)
	var held bool
	req.transcript, held = w.recent.before(m.SessionID, m, w.cfg.Context)
	req.readTranscript = !held
	w.busy = j
	req.working = w.status(presence.SubWorking, m.ID)
	w.log.Info("running", keyMsg, m.ID, keyJob, id, keySession, resume)
	go func() {
		defer stop()
		w.done <- w.run(ctx, req)
	}()
}

// takeAnswer makes j the answer to the question its CLI session asked, if
// one awaits its sender's answer: the run then ends the asking job, and an
// answer that allows grants the question's permission rules to this run.
func (w *watcher) takeAnswer(j *job) {
	m := &j.it.msg
	q, ok := w.awaiting[j.key]
	if !ok || q.Asker != m.From {
		return
	}
	if !w.answerTrusted(&j.it, q.Asker) {
		w.log.Warn("not taken as the answer: it does not verify as the asker", keyMsg, m.ID, keyJob, q.Job, keyAsker, q.Asker, keyVerdict, j.it.verdict.String())
		return
	}
	j.rec.Event(modelcli.Event{Kind: modelcli.EventInputSent, Text: m.Content.Text, Data: jsonString(q.Job)})
	j.answers = q.Job
	if len(q.Allow) > 0 && modelcli.ParseAnswer(m.Content.Text).Allow {
		j.allow = q.Allow
		j.rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: "allowed for this run: " + strings.Join(q.Allow, ", ")})
		w.log.Info("allowed for this run", keyMsg, m.ID, keyJob, q.Job, keyAllow, q.Allow)
	}
	delete(w.awaiting, j.key)
}

// launching returns the running job's launching channel while the job has
// not been recorded as launched; nil (never ready) otherwise.
func (w *watcher) launching() <-chan struct{} {
	if w.busy == nil || w.busy.launched {
		return nil
	}
	return w.busy.launching
}

// launched records the running job, now that its CLI is starting: the job
// record (which prunes old ones) and the end of the job whose question it
// answers.
func (w *watcher) launched() {
	j := w.busy
	if j == nil || j.launched {
		return
	}
	j.launched = true
	if err := j.rec.Persist(); err != nil {
		w.logOnce("job", "cannot record the job", keyMsg, j.it.msg.ID, keyErr, err)
	}
	if j.answers != "" {
		if err := jobs.SetStatus(w.cfg.Root, w.cfg.Agent, j.answers, jobs.Completed); err != nil {
			w.log.Warn("cannot close the job that asked", keyJob, j.answers, keyErr, err)
		}
	}
}

// run builds the prompt and runs the CLI. It runs in its own goroutine and
// touches no watcher state; it closes req.launching just before the CLI
// starts (or on its way out if it never does), and writes the working
// presence while the CLI starts, before it returns.
func (w *watcher) run(ctx context.Context, req runRequest) (res jobResult) {
	closeOnce := sync.OnceFunc(func() { close(req.launching) })
	defer closeOnce()
	w.endPrevious(&req.it.msg, req.rec)
	cli, err := w.cliRequest(&req)
	if err != nil {
		return jobResult{it: req.it, err: err}
	}
	closeOnce()
	// Presence says WORKING while the CLI starts, not before, and before
	// the loop hears that the run ended (and writes IDLE).
	wrote := make(chan error, 1)
	go func() { wrote <- w.writePresence(req.working) }()
	defer func() { res.presenceErr = <-wrote }()
	return w.runCLI(ctx, &req, cli)
}

// cliRequest builds the prompt and the CLI's request.
func (w *watcher) cliRequest(req *runRequest) (modelcli.Request, error) {
	m := req.it.msg
	transcript := req.transcript
	if req.readTranscript {
		var err error
		transcript, err = channel.Recent(w.cfg.Root, m.SessionID, m.File, w.cfg.Context)
		if err != nil {
			w.log.Warn("no transcript for the prompt", keyMsg, m.ID, keyErr, err)
		}
	}
	transcript = w.trustedOnly(transcript, m.SessionID)
	keyed := w.cfg.Verifier.Agents()
	data := prompt.Data{
		Agent:   w.cfg.Agent,
		Channel: m.SessionID,
		Host:    w.cfg.Host,
		Role:    w.cfg.Role,
		Memory:  prompt.LoadMemory(w.cfg.Memory, 0),
		Tasks:   prompt.LoadTasks(w.cfg.Root, m.SessionID, w.cfg.Agent, w.cfg.Verifier), // context recovery
		// Checked whole, then cut to a byte budget, whatever the template.
		Transcript: prompt.CutContext(w.senders(transcript, m.SessionID, keyed)),
		Message:    w.sender(&m, m.SessionID, keyed),
		MaxHops:    max(w.cfg.MaxHops, 0),
		Now:        w.now(),
	}
	text, err := w.cfg.Template.Render(data)
	if err == nil && req.since != "" {
		req.full = text
		text, err = followUpPrompt(data, req.since)
	}
	if err != nil {
		return modelcli.Request{}, fmt.Errorf("build prompt: %w", err)
	}
	return modelcli.Request{
		Prompt:     text,
		Env:        append(w.env(&m), req.traceEnv...),
		Dir:        w.cfg.Workdir,
		Timeout:    w.cfg.Timeout,
		Session:    req.resume,
		AllowTools: req.allow,
		OnEvent:    req.rec.Event,
		OnStart: func(pid int) {
			req.rec.Update(func(j *jobs.Job) { j.PID, j.Boot = pid, w.claims.Self.BootID })
		},
	}, nil
}

// previousGrace is how long a previous run's process group has between
// SIGTERM and SIGKILL.
const previousGrace = 2 * time.Second

// endPrevious deals with an earlier run of m whose record still says
// running: its watcher died (SIGKILL, a crash) before it ended. The new
// job (rec, not yet on disk) links to it (rerun_of) and its record is
// marked interrupted. If it ran on this host and boot, and the CLI's own
// children outlived the watcher, their process group is ended. Called
// from the job's goroutine, before the CLI runs again.
func (w *watcher) endPrevious(m *channel.Message, rec *jobs.Recorder) {
	old, err := jobs.ForMessage(w.cfg.Root, w.cfg.Agent, m.SessionID, m.Key())
	if err != nil || old.Status != jobs.Running || old.Instance == w.instance {
		return
	}
	rec.Update(func(j *jobs.Job) { j.RerunOf = old.ID })
	if err := jobs.SetStatus(w.cfg.Root, w.cfg.Agent, old.ID, jobs.Interrupted); err != nil {
		w.log.Warn("cannot mark the previous run of this message interrupted", keyMsg, m.ID, keyJob, old.ID, keyErr, err)
	}
	if old.PID <= 0 || old.Host != w.cfg.Host || old.Boot == "" || old.Boot != w.claims.Self.BootID {
		return
	}
	// The group id may have been reused since: end it only if a member
	// still runs for this message (the CLI's environment, docs/protocol.md#the-model-run).
	if !proc.GroupHasEnv(old.PID, runenv.MessageID+"="+m.ID) {
		return
	}
	ended, err := proc.EndGroup(old.PID, previousGrace)
	switch {
	case err != nil:
		w.log.Warn("cannot end the previous run of this message", keyMsg, m.ID, keyPGID, old.PID, keyErr, err)
	case ended:
		w.log.Warn("ended the previous run of this message, left by a watcher that died", keyMsg, m.ID, keyPGID, old.PID)
	}
}

// runCLI runs the CLI; a resume it refuses (the session is gone) runs
// again in a new session.
func (w *watcher) runCLI(ctx context.Context, req *runRequest, cli modelcli.Request) jobResult {
	resp, err := w.runLimited(ctx, req, cli)
	if !errors.Is(err, modelcli.ErrSessionGone) || req.resume == "" || ctx.Err() != nil {
		return jobResult{it: req.it, resp: resp, err: err}
	}
	w.log.Warn("session cannot be resumed; starting a new one", keyMsg, req.it.msg.ID, keySession, req.resume, keyErr, err)
	req.rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: "session " + req.resume + " cannot be resumed; starting a new one"})
	req.rec.Update(func(j *jobs.Job) { j.Session, j.Resumed = "", false })
	cli.Session = ""
	if req.full != "" {
		cli.Prompt = req.full // a new session has not seen the earlier turns
	}
	resp, err = w.runLimited(ctx, req, cli)
	return jobResult{it: req.it, resp: resp, err: err, fresh: true}
}

// env is docs/protocol.md#the-model-run's environment for the CLI.
func (w *watcher) env(m *channel.Message) []string {
	run := runenv.Message{Root: string(w.cfg.Root), Agent: w.cfg.Agent, Channel: m.SessionID, ID: m.ID, From: m.From, Hops: m.Metadata.Hops}
	return append(slices.Clip(w.cfg.Env), run.Env()...)
}

// finish handles the end of a CLI run: post the reply or record the failure.
func (w *watcher) finish(r jobResult) {
	j := w.busy
	if !j.launched {
		w.launched() // the CLI ended (or never started) before the loop heard
	}
	if r.presenceErr != nil {
		w.logOnce("presence", "cannot write presence", keyErr, r.presenceErr)
	}
	w.busy = nil
	if j.asking != nil {
		j.asking.expires.Stop() // the turn ended without its answer
	}
	now := w.now()
	w.traceRun(j, &r, now)
	w.spend(&r.resp, now)
	w.keepSession(j, &r, now)
	w.liveDone(j, &r)
	switch {
	case j.killed:
		w.finishKilled(j, &r, now)
	case r.err != nil:
		w.finishFailed(j, &r, now)
	case r.resp.Text == NoReply && r.resp.Question == nil:
		w.handled++
		w.log.Info("no reply needed", keyMsg, r.it.msg.ID, keyChannel, r.it.msg.SessionID, keyDur, now.Sub(j.started))
		j.rec.Finish(jobs.Completed, r.resp, nil)
		w.finishClaim(&r.it, claim.Skipped, "", "the model answered "+NoReply)
	default:
		w.finishReplied(j, &r, now)
	}
	if err := j.rec.Err(); err != nil {
		w.logOnce("job", "cannot record the job", keyMsg, r.it.msg.ID, keyErr, err)
	}
	w.dirty = true
	w.idle()
}

// keepSession records the CLI session the run used, or forgets the one it
// could not resume.
func (w *watcher) keepSession(j *job, r *jobResult, now time.Time) {
	switch {
	case r.resp.Session != "":
		if err := w.sess.put(j.key, r.resp.Session, now); err != nil {
			w.logOnce("sessions", "cannot save sessions", keyErr, err)
		}
	case r.fresh:
		w.sess.drop(j.key)
	}
}

// finishKilled ends a job stopped at someone's request: no reply.
func (w *watcher) finishKilled(j *job, r *jobResult, now time.Time) {
	m := &r.it.msg
	w.failed++
	w.log.Warn("killed by request", keyMsg, m.ID, keyJob, j.id, keyDur, now.Sub(j.started))
	j.rec.Finish(jobs.Killed, r.resp, errKilled)
	w.finishClaim(&r.it, claim.Failed, "", "job killed by request")
	// Killed is failed (package delivery): its sender learns that no
	// answer will come, whoever asked for the kill.
	w.bounce(m, delivery.Failed, "", "job killed by request")
}

// finishFailed ends a job whose CLI failed: an error reply if PostErrors,
// unless the claim was lost to another watcher, which answers instead.
func (w *watcher) finishFailed(j *job, r *jobResult, now time.Time) {
	m := &r.it.msg
	w.failed++
	w.log.Error("failed", keyMsg, m.ID, keyChannel, m.SessionID, keyDur, now.Sub(j.started), keyErr, r.err, keyStderr, tail(r.resp.Stderr, 2000))
	j.rec.Finish(jobs.Failed, r.resp, r.err)
	// The error's last words, quoted: it carries the CLI's output, and
	// goes into a claim and a reply the watcher signs.
	note := channel.Quote(tail(r.err.Error(), channel.MaxQuoted-len("…")))
	switch {
	case errors.Is(w.claims.Heartbeat(m.SessionID, m.Key()), claim.ErrLost):
		// Another watcher owns the message now and will answer it: an
		// error reply would take its reply token.
		w.log.Info("claim lost; not posting", keyMsg, m.ID)
		w.endHop(&r.it, "lost", "", "")
		return
	case w.cfg.PostErrors:
		w.post(&r.it, fmt.Sprintf("[collab] %s could not answer: %s", w.cfg.Agent, note), claim.Failed, nil)
	default:
		w.finishClaim(&r.it, claim.Failed, "", note)
	}
	w.bounce(m, delivery.Failed, "", note)
}

// finishReplied posts the CLI's answer, or the question it asked (the job
// then awaits the asker's answer, which resumes its session).
func (w *watcher) finishReplied(j *job, r *jobResult, now time.Time) {
	m := &r.it.msg
	if r.resp.Truncated {
		w.log.Warn("output truncated", keyMsg, m.ID)
	}
	text, status, ext := r.resp.Text, jobs.Completed, map[string]json.RawMessage(nil)
	if q := r.resp.Question; q != nil {
		text, ext = questionText(r.resp.Text, q), needsInput(j.id, q)
		if j.key != "" { // none to resume with scope none
			status = jobs.AwaitingInput
		}
	}
	id := w.post(&r.it, text, claim.Replied, ext)
	if id != "" {
		j.rec.Update(func(jb *jobs.Job) { jb.Reply = id }) // before the status says done
	}
	j.rec.Finish(status, r.resp, nil)
	if id == "" {
		return
	}
	w.handled++
	w.lastReply, w.lastReplyID = now, id
	w.guards.replied(m.From, m.Metadata.Hops, now)
	dur := now.Sub(j.started)
	if status == jobs.AwaitingInput {
		w.awaiting[j.key] = question{Job: j.id, Asker: m.From, Allow: r.resp.Question.Allow}
		if len(r.resp.Question.Allow) > 0 {
			w.warnAsker(m)
		}
		w.log.Info("asked for input", keyMsg, m.ID, keyReply, id, keyJob, j.id, keyDur, dur)
	} else {
		w.log.Info("replied", keyMsg, m.ID, keyChannel, m.SessionID, keyReply, id, keyDur, dur, keyCost, r.resp.CostUSD)
	}
}

// checkKill stops the running job if someone who may asked for it
// (collab jobs kill; the rule is jobs.MayKill, judged with the job this
// watcher runs, not with its record on disk). A request it may not honour
// is logged, reported when forged, and removed, so that one it may honour
// can be made.
func (w *watcher) checkKill() {
	if w.busy == nil || w.busy.killed {
		return
	}
	id := w.busy.id
	k, err := jobs.ReadKill(w.cfg.Root, w.cfg.Agent, id)
	if err != nil {
		return
	}
	msg := &w.busy.it.msg
	r := k.Requester(w.cfg.Root, w.cfg.Verifier, w.cfg.Trust, w.cfg.Agent, id, os.Geteuid())
	if err := jobs.MayKill(jobs.Job{ID: id, Agent: w.cfg.Agent, From: msg.From}, r); err != nil {
		// Each refused file is logged once: it is removed (or, when it
		// cannot be, logged once a minute). A forgery is reported in the
		// channel once per job, since its writer may write another each
		// poll.
		attrs := []any{keyJob, id, keyFrom, tree.Printable(modelcli.Clip(k.By, maxLoggedName)), keyVerdict, r.Verdict, keyReason, err.Error()}
		if derr := jobs.DismissKill(w.cfg.Root, w.cfg.Agent, id); derr != nil {
			w.logOnce("refused-kill "+id, "kill request refused", append(attrs, keyErr, derr)...)
		} else {
			w.log.Warn("kill request refused", attrs...)
		}
		if reported := "reported-kill " + id; !r.Authentic && !r.Admin && w.errLogged[reported].IsZero() {
			w.errLogged[reported] = w.now()
			w.forgedFile(msg.SessionID, id, "kill request", k.By, r.Verdict)
		}
		return
	}
	w.log.Warn("kill requested; stopping the CLI", keyMsg, msg.ID, keyJob, id, keyFrom, tree.Printable(modelcli.Clip(k.By, maxLoggedName)))
	w.busy.killed = true
	w.busy.stop()
}

// maxLoggedName bounds a requester's name in the log: a kill file's by is
// anyone's text, up to the file's size.
const maxLoggedName = 200

// needsInput is the extension of the reply that asks q for job.
func needsInput(job string, q *modelcli.Question) map[string]json.RawMessage {
	ni := map[string]any{"job": job, "options": q.Options}
	if len(q.Allow) > 0 {
		ni["allow"] = q.Allow
	}
	return map[string]json.RawMessage{extNeedsInput: mustJSON(ni)}
}

// questionText is the message that asks for input: the model's words, the
// question and the options.
func questionText(said string, q *modelcli.Question) string {
	var b strings.Builder
	if said = strings.TrimSpace(said); said != "" && said != NoReply {
		b.WriteString(said)
		b.WriteString("\n\n")
	}
	b.WriteString(q.Text)
	if len(q.Options) > 0 {
		fmt.Fprintf(&b, "\n\nReply with one of: %s.", strings.Join(q.Options, ", "))
	}
	if len(q.Allow) > 0 {
		rules := make([]string, len(q.Allow))
		for i, r := range q.Allow {
			rules[i] = channel.Quote(r) // the CLI's words for what the model tried
		}
		fmt.Fprintf(&b, " A reply whose first word is %s, yes or y lets the run that resumes the session use %s (that run only); any other reply is passed on as it is.",
			modelcli.AllowOption, strings.Join(rules, ", "))
	}
	return b.String()
}

func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

func jsonString(s string) json.RawMessage { return mustJSON(s) }

// tail is the last n bytes of s, marked as cut when it is.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
