package web_test

import (
	"os"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
)

// reviewFlow is a workflow instance, review@pr7, whose channel holds a
// small conversation: ann asks the coder, the coder asks the reviewer
// (that message, Asked, with every stage of its timeline in the files),
// they go back and forth, the reviewer tells ann, the coder tells
// everyone.
type reviewFlow struct {
	Channel string
	Asked   channel.Message // coder → reviewer, with a timeline
	Msgs    []channel.Message
}

const (
	flowCoder    = "coder--pr7"
	flowReviewer = "reviewer--pr7"
)

func newReviewFlow(t *testing.T, root tree.Root) reviewFlow {
	t.Helper()
	base := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	host, _ := os.Hostname()
	f := reviewFlow{Channel: "review--pr7"}
	rec := workflow.Record{Name: "review", Instance: "pr7", Status: workflow.Running, Started: base.Add(-time.Minute),
		Host: host, PID: os.Getpid(), Agents: []string{flowCoder, flowReviewer}, Channel: f.Channel}
	if err := workflow.WriteRecord(root, &rec); err != nil {
		t.Fatal(err)
	}
	for _, a := range rec.Agents { // their watchers run: the instance too
		if err := presence.Write(root, presence.Status{AgentID: a, State: presence.StateAwake, Substate: presence.SubIdle,
			Host: host, WatcherPID: os.Getpid(), Channel: f.Channel, Timestamp: presence.FormatTime(time.Now())}); err != nil {
			t.Fatal(err)
		}
	}
	post := func(ms int, from, to, text string, re *channel.Message) channel.Message {
		t.Helper()
		m := channel.Message{SessionID: f.Channel, From: from, To: to, Content: channel.Content{Text: text}}
		if re != nil {
			m.Metadata.InReplyTo = re.ID
		}
		m.Metadata.Host = "build-1"
		w := channel.Writer{Root: root, Now: func() time.Time { return at(ms) }}
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		f.Msgs = append(f.Msgs, m)
		return m
	}
	post(0, "ann", flowCoder, "Please fix the lease renewal: leases lapse under load (issue 12).", nil)
	f.Asked = post(60_000, flowCoder, flowReviewer, "Patch ready: renew at two thirds of the TTL. <b>Review?</b>", nil)

	// The reviewer's watcher: seen (woken by fsnotify), claimed, ran,
	// answered; the coder's send --wait saw the reply.
	owner := claim.Owner{Agent: flowReviewer, Host: "build-2", PID: 4242, Instance: "w1"}
	if err := delivery.MarkSeenWoken(claim.Files{Root: root}, f.Channel, f.Asked.ID, owner, at(60_410),
		delivery.Woken{At: at(60_400), Via: delivery.ViaFsnotify}, "", "", nil); err != nil {
		t.Fatal(err)
	}
	store := &claim.Store{Root: root, Self: owner, Now: func() time.Time { return at(60_900) }}
	if _, _, err := store.Acquire(f.Channel, f.Asked.ID); err != nil {
		t.Fatal(err)
	}
	run, err := jobs.Start(root, jobs.Job{ID: jobs.NewID(), Agent: flowReviewer, Host: "build-2", Channel: f.Channel,
		Message: f.Asked.ID, From: flowCoder, CLI: "codex", Started: at(61_000)}, func() time.Time { return at(94_800) })
	if err != nil {
		t.Fatal(err)
	}
	run.Event(modelcli.Event{Time: at(64_200), Kind: modelcli.EventProgress, Text: "Reading the patch."})
	answer := post(95_000, flowReviewer, flowCoder, "Looks right; add a test for a lease that expires mid-renewal.", &f.Asked)
	run.Finish(jobs.Completed, modelcli.Response{Text: answer.Content.Text}, nil)
	if err := store.Finish(f.Channel, f.Asked.ID, claim.Replied, answer.ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := delivery.MarkAwaited(root, f.Channel, f.Asked.ID, answer.ID, claim.Owner{Agent: flowCoder, Host: "build-1", PID: 99}, at(95_300), nil); err != nil {
		t.Fatal(err)
	}

	done := post(140_000, flowCoder, flowReviewer, "Test added: TestLeaseExpiresMidRenewal.", &answer)
	post(170_000, flowReviewer, "ann", "Approved; merging PR 7.", &done)
	post(185_000, flowCoder, "all", "Merged.", nil)
	return f
}

// askedStages are the stages of the timeline of reviewFlow.Asked.
var askedStages = []string{delivery.StageSent, delivery.StageVisible, delivery.StageSeen, delivery.StageClaimed,
	delivery.StageRunStarted, delivery.StageFirstOutput, delivery.StageReplied, delivery.StageReplySeen}
