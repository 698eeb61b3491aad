package main

// Scenario 17: a remote watcher partitioned for minutes. The agent is
// served only by `collab watch --remote` (its own --state-dir and key, a
// --root that does not exist), whose NATS connection goes through the
// harness's tcpProxy; one bridge serves the tree. A writer on the mount
// posts to the agent before the partition, all through it (the proxy
// stopped, its connections closed, for 2 minutes; 30 s with --quick) and
// after it is healed. The watcher must live through the partition, answer
// nothing while cut off (else the cut reached nothing), and answer the
// backlog once healed. Scored by claimVerdict: every message answered
// exactly once, signed by the agent's key.

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// watcherPartition (scenario 17).
func watcherPartition(ctx context.Context, e *env) error {
	r, err := newRemoteRun(ctx, e, 0)
	if err != nil {
		return err
	}
	defer r.close()
	key, err := agentKey(e)
	if err != nil {
		return err
	}
	p := &tcpProxy{target: fmt.Sprintf("127.0.0.1:%d", r.port)}
	if err := p.start("127.0.0.1:0"); err != nil {
		return err
	}
	defer p.stop()
	if err := r.startBridge(ctx, "bridge"); err != nil {
		return err
	}
	base := watchOpts{delay: 300 * time.Millisecond, jitter: 500 * time.Millisecond, claimGrace: 3 * time.Second,
		env: []string{"COLLAB_KEY=" + key}}
	rw, err := e.startWatcher(ctx, remoteWatch(base, r, "nats://"+p.addr), true)
	if err != nil {
		return err
	}
	cut := time.Duration(e.size(120, 30)) * time.Second
	before, during, after := e.size(10, 6), e.size(24, 10), e.size(10, 6)

	// Before: the partition comes right after the last of these, so the
	// watcher is cut off in the middle of its work.
	if err := postAll(ctx, e, "s17 before", before, 200*time.Millisecond, 600*time.Millisecond); err != nil {
		return err
	}
	closed := p.cutOff(2 * time.Second)
	cutAt := time.Now()
	e.logf("remote watcher partitioned for %v: proxy stopped, %d connections closed", cut, closed)
	if closed == 0 {
		e.problem("no connection through the proxy was open at the cut: the watcher was not cut off")
	}
	sent := e.acks.snapshot()
	gap := cut / time.Duration(during+2)
	if err := postAll(ctx, e, "s17 during", during, gap/2, gap*6/5); err != nil {
		return err
	}
	backlog := e.acks.snapshot()
	maps.DeleteFunc(backlog, func(id string, _ ack) bool { _, ok := sent[id]; return ok })
	if err := sleep(ctx, time.Until(cutAt.Add(cut))); err != nil {
		return err
	}
	s := newScanner(tree.Root(e.backing).Channel(chanName), chanName, agent)
	early, err := s.answered(backlog)
	if err != nil {
		return err
	}
	if early > 0 {
		e.problem("%d of the %d messages posted during the partition were answered before it healed: the partition cut nothing", early, len(backlog))
	}
	if rw.exited() {
		e.problem("the remote watcher exited during the partition: %v: %s", rw.err, tailFile(rw.log, 300))
	}
	if err := p.start(p.addr); err != nil {
		return fmt.Errorf("heal the partition: %w", err)
	}
	healed := time.Now()
	e.heal()
	e.logf("partition healed")

	// After: more messages while the backlog is answered.
	sendDone, sendErr := postSpaced(ctx, e, "s17 after", after, 200*time.Millisecond, 600*time.Millisecond)
	took := time.Duration(-1)
	for deadline := healed.Add(90 * time.Second); time.Now().Before(deadline); {
		n, err := s.answered(backlog)
		if err != nil {
			return err
		}
		if n == len(backlog) {
			took = time.Since(healed)
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	<-sendDone
	if err := sendErr(); err != nil {
		return err
	}
	if err := e.await(ctx, 60*time.Second, 4*time.Second); err != nil {
		return err
	}
	log := readFromOff(rw.log, 0)
	e.note("the remote watcher's NATS connection (through the harness's TCP proxy) cut for %v (proxy stopped, %d connections closed) after %d messages; %d posted on the mount during the partition, none answered before it healed; %d after; the watcher logged %d disconnects and %d reconnects and did not exit",
		cut, closed, before, len(backlog), after, strings.Count(log, "nats disconnected"), strings.Count(log, "nats reconnected"))
	if took < 0 {
		e.problem("the %d messages posted during the partition were not all answered within 90 s of healing", len(backlog))
	} else {
		e.note("the backlog of %d messages was answered %v after healing", len(backlog), took.Round(100*time.Millisecond))
	}
	return nil
}

// postAll is postSpaced waited for.
func postAll(ctx context.Context, e *env, tag string, n int, lo, hi time.Duration) error {
	_, err := postSpaced(ctx, e, tag, n, lo, hi)
	return err()
}
