package main

// Scenario 16: bridges killed mid-claim. The agent has two watchers: one
// on the tree (`collab watch`) and one on a host without the mount
// (`collab watch --remote`, its own --state-dir and key, a --root that
// does not exist), whose claims, reply tokens and seen files are made on
// the mount by the bridges (op claimfs). A writer on the mount sends a
// burst to the agent while the bridges are SIGKILLed and restarted, two
// kills in three the moment a bridge logs "bridge: claimfs" (debug level:
// the file is on the mount, the answer not yet sent), and the remote
// watcher is SIGKILLed once right after it logs a claim. Scored by
// claimVerdict.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// claimKills (scenario 16).
func claimKills(ctx context.Context, e *env) error {
	r, err := newRemoteRun(ctx, e, 0)
	if err != nil {
		return err
	}
	defer r.close()
	r.level = "debug" // "bridge: claimfs" is a debug record
	key, err := agentKey(e)
	if err != nil {
		return err
	}
	labels := []string{"bridge-a", "bridge-b"}
	for _, l := range labels {
		if err := r.startBridge(ctx, l); err != nil {
			return err
		}
	}
	base := watchOpts{delay: 300 * time.Millisecond, jitter: 500 * time.Millisecond, claimGrace: 3 * time.Second,
		env: []string{"COLLAB_KEY=" + key}}
	mounted := base
	mounted.root, mounted.label = e.backing, "mounted"
	// As root the keyring counts as writable; it is the harness's own.
	mounted.args = []string{"--allow-writable-keyring"}
	if _, err := e.startWatcher(ctx, mounted, true); err != nil {
		return err
	}
	rem := remoteWatch(base, r, r.url)
	rw, err := e.startWatcher(ctx, rem, true)
	if err != nil {
		return err
	}

	n := e.size(60, 30)
	sendDone, sendErr := postSpaced(ctx, e, "s16", n, 100*time.Millisecond, 400*time.Millisecond)
	k := &claimKiller{e: e, r: r, labels: labels, kinds: make(map[string]int)}
	start := time.Now()
	remoteKilled := false
	for {
		select {
		case <-sendDone:
		case <-time.After(between(e.rng, 200*time.Millisecond, 700*time.Millisecond)):
		}
		if isClosed(sendDone) {
			break
		}
		if !remoteKilled && time.Since(start) > time.Duration(n)*150*time.Millisecond {
			// The remote watcher, once, right after it claims.
			follow, err := followLog(rw.log, fileSize(rw.log))
			if err != nil {
				return err
			}
			ok, err := follow.until(ctx, 3*time.Second, nil, "claimed")
			follow.close()
			if err != nil {
				return err
			}
			rw.kill()
			e.logf("remote watcher SIGKILLed (right after a claim: %v)", ok)
			e.note("the remote watcher SIGKILLed once (right after it logged \"claimed\": %v) and restarted on its state", ok)
			remoteKilled = true
			if rw, err = e.startWatcher(ctx, rem, true); err != nil {
				return err
			}
			e.heal()
			continue
		}
		if err := k.killOne(ctx); err != nil {
			return err
		}
	}
	if err := sendErr(); err != nil {
		return err
	}
	k.report()
	if !remoteKilled {
		e.problem("the remote watcher was never killed")
	}
	if err := e.await(ctx, 45*time.Second, 4*time.Second); err != nil {
		return err
	}
	claims, replied := 0, 0
	for line := range strings.Lines(readFromOff(rw.log, 0)) {
		switch {
		case textMsg([]byte(line), []string{"claimed"}):
			claims++
		case textMsg([]byte(line), []string{"replied"}):
			replied++
		}
	}
	e.note("the remote watcher (both runs) logged %d claims and %d replies", claims, replied)
	if claims == 0 {
		e.problem("the remote watcher never claimed: its claims through the bridges were not tested")
	}
	return nil
}

// agentKey makes the agent's signing key in the run folder, trusted in the
// tree's keyring, and returns its path.
func agentKey(e *env) (string, error) {
	key := filepath.Join(e.dir, agent+".key")
	signer, err := signing.NewKey(key, agent, false)
	if err == nil {
		err = keyring.Open(tree.Root(e.backing).Keys()).Trust(agent, signer.PublicKey())
	}
	return key, err
}

// remoteWatch is o for `collab watch --remote` on a host without the
// mount: a --root that does not exist, its own --state-dir, NATS at url.
func remoteWatch(o watchOpts, r *remoteRun, url string) watchOpts {
	o.root, o.label = r.absent, "remote"
	o.args = []string{"--remote", "--state-dir", filepath.Join(r.e.dir, "remote-state"), "--nats", url}
	return o
}

// claimKiller SIGKILLs and restarts scenario 16's bridges.
type claimKiller struct {
	e      *env
	r      *remoteRun
	labels []string
	kills  int
	aimed  int
	landed int            // aimed kills that came right after a claimfs write
	kinds  map[string]int // of those, by the file written
}

// killOne SIGKILLs one bridge, two times in three the moment it logs a
// claimfs write (or after 2 s without one), and restarts it 0.1-0.5 s
// later.
func (k *claimKiller) killOne(ctx context.Context) error {
	label := k.labels[k.e.rng.IntN(len(k.labels))]
	k.r.mu.Lock()
	w := k.r.bridges[label]
	k.r.mu.Unlock()
	if k.kills%3 != 2 {
		k.aimed++
		off := fileSize(w.log)
		follow, err := followLog(w.log, off)
		if err != nil {
			return err
		}
		ok, err := follow.until(ctx, 2*time.Second, nil, "bridge: claimfs")
		w.kill()
		follow.close()
		if err != nil {
			return err
		}
		if op, file := lastClaimFS(w.log, off); ok && file != "" {
			k.landed++
			k.kinds[op+" "+claimKind(file)]++
		}
	} else {
		w.kill()
	}
	k.kills++
	if err := sleep(ctx, between(k.e.rng, 100*time.Millisecond, 500*time.Millisecond)); err != nil {
		return err
	}
	if err := k.r.startBridge(ctx, label); err != nil {
		return err
	}
	k.e.heal()
	return nil
}

// report notes where the kills landed; a run where none landed right
// after a claimfs write tested nothing.
func (k *claimKiller) report() {
	var parts []string
	for _, kind := range []string{"publish claim", "replace claim", "publish reply token", "publish seen file"} {
		parts = append(parts, fmt.Sprintf("%s %d", kind, k.kinds[kind]))
	}
	k.e.note("%d bridge SIGKILLs (one of two bridges at a time, each restarted 0.1-0.5 s later); %d aimed at the \"bridge: claimfs\" debug line (the file on the mount, the answer not yet sent), %d landed right after one: %s",
		k.kills, k.aimed, k.landed, strings.Join(parts, ", "))
	if k.landed == 0 {
		k.e.problem("no kill landed right after a claimfs write: the kill point was not tested")
	}
}

// lastClaimFS returns the op and file of the last "bridge: claimfs" line
// of a bridge's log from off.
func lastClaimFS(path string, off int64) (op, file string) {
	for line := range strings.Lines(readFromOff(path, off)) {
		if !textMsg([]byte(line), []string{"bridge: claimfs"}) {
			continue
		}
		op, file = textAttr(line, "op"), textAttr(line, "file")
	}
	return op, file
}

// textAttr returns the value of key in a line of slog's text handler
// (values here have no spaces or quotes).
func textAttr(line, key string) string {
	for f := range strings.FieldsSeq(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// claimKind names the file of a claims folder by its name (see package
// claim: M.json and M.N.json claims, M.reply and M.reply.N tokens, M.seen).
func claimKind(name string) string {
	_, rest, _ := strings.Cut(name, ".")
	switch {
	case strings.HasPrefix(rest, "reply"):
		return "reply token"
	case rest == "seen":
		return "seen file"
	default:
		return "claim"
	}
}

// readFromOff is readFrom as text, empty on an error.
func readFromOff(path string, off int64) string {
	data, _ := readFrom(path, off)
	return string(data)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// postSpaced posts n messages to the agent on the mount (texts "tag
// message i of n"), as a writer with channel.Writer, each lo-hi after the
// last; like sendSpaced.
func postSpaced(ctx context.Context, e *env, tag string, n int, lo, hi time.Duration) (done <-chan struct{}, err func() error) {
	rng := newRng(e)
	wr := &channel.Writer{Root: tree.Root(e.backing)}
	var postErr error
	c := make(chan struct{})
	go func() {
		defer close(c)
		for i := range n {
			if _, err := e.post(wr, &channel.Message{From: sender, Content: channel.Content{Text: fmt.Sprintf("%s message %d of %d", tag, i+1, n)}}); err != nil {
				postErr = err
				return
			}
			if err := sleep(ctx, between(rng, lo, hi)); err != nil {
				postErr = err
				return
			}
		}
	}()
	return c, func() error { <-c; return postErr }
}

// claimVerdict scores scenario 16 from the files: check's verdict (every
// message answered once, with the stand-in's answer), plus a reply to a
// message the writer never sent, and a file of the agent not signed by its
// key, counted as corrupt.
func claimVerdict(e *env) (verdict, error) {
	return claimScore(tree.Root(e.backing), e.acks.snapshot())
}

// claimScore is claimVerdict over the tree at root and the acks.
func claimScore(root tree.Root, acks map[string]ack) (verdict, error) {
	v, err := check(root.Channel(chanName), chanName, agent, acks)
	if err != nil {
		return v, err
	}
	for id, n := range v.Others {
		v.Corrupt += n
		v.Details = append(v.Details, fmt.Sprintf("corrupt: %d replies to %s, which the writer never sent", n, id))
	}
	msgs, _, err := channel.ReadAll(root, chanName, channel.ReaderOptions{})
	if err != nil {
		return v, err
	}
	ver := signing.NewVerifier(keyring.Open(root.Keys()))
	unsigned := 0
	for _, m := range msgs {
		if m.From != agent {
			continue
		}
		if got := m.Verify(ver, chanName); got != signing.Verified {
			if unsigned++; unsigned <= 5 {
				v.Details = append(v.Details, fmt.Sprintf("corrupt: %s from %s: signature %s", m.ID, agent, got))
			}
		}
	}
	v.Corrupt += unsigned
	return v, nil
}
