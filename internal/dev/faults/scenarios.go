package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// scenario is one fault and its run.
type scenario struct {
	id, name string
	bindfs   bool // needs bindfs mounts
	run      func(ctx context.Context, e *env) error
	after    func(e *env) // extra checks once the watchers stopped
	// verdict, if set, scores the run instead of check (the replies).
	verdict func(e *env) (verdict, error)
	budget  time.Duration // the run's time limit; 0: 2 minutes
}

// limit is the scenario's time limit.
func (s scenario) limit() time.Duration { return cmpOr(s.budget, 2*time.Minute) }

var scenarios = []scenario{
	{id: "1", name: "writer killed mid-write", run: killedWriters},
	{id: "2", name: "watcher SIGKILL", run: sigkill},
	{id: "3", name: "SIGSTOP past claim grace", bindfs: true, run: sigstop},
	{id: "4", name: "ENOSPC", run: diskFull, after: outboxLogged},
	{id: "5", name: "permission denied", run: permissionDenied},
	{id: "6", name: "negative lookup cache", bindfs: true, run: negativeCache},
	{id: "7", name: "stale attribute cache", bindfs: true, run: staleAttrs},
	{id: "8", name: "readdir vs renames", run: readdirRace, after: noticedOnce},
	{id: "9", name: "clock skew ±5m, jump back 2s", run: clockSkew},
	{id: "10", name: "NATS killed, paused, restarted", run: brokerFaults},
	{id: "11", name: "state corrupted", run: corruptState},
	{id: "12", name: "garbage in channel", run: garbage, after: garbageLogged},
	{id: "13", name: "bridge killed mid-post", run: bridgeKills, verdict: remoteVerdict},
	{id: "14", name: "NATS restarted during a remote burst", run: natsRestart, verdict: remoteVerdict},
	{id: "15", name: "remote host partitioned", run: partition, verdict: remoteVerdict},
	{id: "16", name: "bridge killed mid-claim", run: claimKills, verdict: claimVerdict},
	{id: "17", name: "remote watcher partitioned for minutes", run: watcherPartition, verdict: claimVerdict, budget: 4 * time.Minute},
	{id: "18", name: "live CLI SIGKILL mid-turn", run: liveCLIKill, verdict: liveVerdict},
	{id: "19", name: "watcher SIGKILL with 3 live sessions", run: liveWatcherKill, verdict: liveVerdict},
	{id: "20", name: "live question unanswered past its timeout", run: liveQuestionTimeout, verdict: liveVerdict},
	{id: "21", name: "bridge down 2 s, remote watcher: back in 5 s", run: backIn5("bridge"), verdict: claimVerdict},
	{id: "22", name: "NATS down 2 s, remote watcher: back in 5 s", run: backIn5("nats"), verdict: claimVerdict},
	{id: "23", name: "one of two bridges killed for good", run: bridgeGone, verdict: remoteVerdict},
	{id: "24", name: "NATS cluster: stream leader killed", run: clusterFault(false), verdict: clusterVerdict, budget: 3 * time.Minute},
	{id: "25", name: "NATS cluster: stream leader partitioned", run: clusterFault(true), verdict: clusterVerdict, budget: 3 * time.Minute},
}

// sigkill: the watcher is SIGKILLed and restarted at once, over and over,
// while messages keep arriving. Every message must be answered exactly
// once. Each kill aims at a point of a message's handling: the harness
// follows the watcher's JSON log (inotify) and kills the moment it logs
// "queued" (before claim), "claimed" (after claim), "running" (during the
// CLI, plus up to 15 ms) or "replied" (after the reply, before the state
// save); one kill in five lands at a random time instead, and one restart
// in four is killed before it is even watching. Where each kill really
// landed is read from the dead watcher's log and state file (phaseOf), and
// counted; the run fails if one of the four points was never hit.
func sigkill(ctx context.Context, e *env) error {
	n := e.size(200, 60)
	o := watchOpts{root: e.backing, jitter: 40 * time.Millisecond, claimGrace: 5 * time.Second}
	logPath := e.logPath()
	off := fileSize(logPath)
	w, err := e.startWatcher(ctx, o, true)
	if err != nil {
		return err
	}
	follow, err := followLog(logPath, off)
	if err != nil {
		return err
	}
	defer follow.close()
	sendDone, sendErr := sendSpaced(ctx, e, n)
	k := &killer{e: e, o: o, w: w, follow: follow, off: off, sendDone: sendDone, hits: make(map[phase]int)}
	if err := k.run(ctx); err != nil {
		return err
	}
	k.report()
	if err := sendErr(); err != nil {
		return err
	}
	return e.await(ctx, 60*time.Second, 3*time.Second)
}

// sendSpaced sends n messages from another goroutine, each 0-60 ms after
// the last. done is closed when it stops; err, called after that, tells
// why it stopped early, if it did.
func sendSpaced(ctx context.Context, e *env, n int) (done <-chan struct{}, err func() error) {
	rng := newRng(e)
	var sendErr error
	c := make(chan struct{})
	go func() {
		defer close(c)
		for i := range n {
			if _, err := e.send(ctx, e.backing, sender, fmt.Sprintf("s2 message %d of %d", i+1, n)); err != nil {
				sendErr = err
				return
			}
			if err := sleep(ctx, between(rng, 0, 60*time.Millisecond)); err != nil {
				sendErr = err
				return
			}
		}
	}()
	return c, func() error { <-c; return sendErr }
}

// killAims is what each kill aims at, in turn: a random time, then the log
// line that starts each phase.
var killAims = []struct {
	at    []string
	extra time.Duration // a random delay below this after the line
}{
	{},
	{at: []string{"queued"}},
	{at: []string{"claimed"}},
	{at: []string{"running"}, extra: 15 * time.Millisecond},
	{at: []string{"replied"}},
}

// killer SIGKILLs and restarts scenario 2's watcher until the sending ends.
type killer struct {
	e        *env
	o        watchOpts
	w        *watchProc // the running watcher
	follow   *logFollower
	off      int64 // where the running watcher's log starts
	sendDone <-chan struct{}

	ready  bool // the running watcher was started to be watching
	aimed  int  // kills aimed so far (not those during a start-up)
	kills  int
	missed int // aimed kills whose log line never came
	hits   map[phase]int
}

// run kills the watcher at each aim in turn, reads where the kill landed,
// and restarts it (killed again during its start-up one time in five).
func (k *killer) run(ctx context.Context) error {
	k.ready = true
	for {
		done, err := k.wait(ctx)
		if err != nil || done {
			return err
		}
		k.w.kill()
		k.kills++
		p, err := phaseOf(k.e, k.off)
		if err != nil {
			return fmt.Errorf("phase of kill %d: %w", k.kills, err)
		}
		k.hits[p]++
		k.ready = k.e.rng.IntN(5) != 0
		k.off = fileSize(k.e.logPath())
		if k.w, err = k.e.startWatcher(ctx, k.o, k.ready); err != nil {
			return err
		}
		k.e.heal()
	}
}

// wait waits for the moment of the next kill and reports whether the
// sending ended meanwhile (then there is no kill).
func (k *killer) wait(ctx context.Context) (done bool, err error) {
	aim := killAims[k.aimed%len(killAims)]
	k.follow.skip()
	switch {
	case !k.ready:
		// Killed again during its start-up.
		return k.doneWithin(between(k.e.rng, 0, 15*time.Millisecond)), nil
	case aim.at == nil:
		k.aimed++
		return k.doneWithin(between(k.e.rng, 30*time.Millisecond, 400*time.Millisecond)), nil
	}
	k.aimed++
	ok, err := k.follow.until(ctx, 2*time.Second, k.sendDone, aim.at...)
	if err != nil {
		return false, err
	}
	if !ok {
		k.missed++
	}
	if ok && aim.extra > 0 {
		time.Sleep(between(k.e.rng, 0, aim.extra))
	}
	return k.doneWithin(0), nil
}

// doneWithin waits d (not at all if 0) and reports whether the sending
// ended meanwhile.
func (k *killer) doneWithin(d time.Duration) bool {
	if d == 0 {
		select {
		case <-k.sendDone:
			return true
		default:
			return false
		}
	}
	select {
	case <-k.sendDone:
		return true
	case <-time.After(d):
		return false
	}
}

// report notes where the kills landed and fails the run if one of the
// required phases was never hit.
func (k *killer) report() {
	var parts []string
	for _, p := range append(slices.Clone(requiredPhases), phaseIdle, phaseStartup) {
		if k.hits[p] > 0 || slices.Contains(requiredPhases, p) {
			parts = append(parts, fmt.Sprintf("%s %d", p, k.hits[p]))
		}
	}
	k.e.note("%d SIGKILLs by phase (read from the dead watcher's log and state): %s", k.kills, strings.Join(parts, ", "))
	if k.missed > 0 {
		k.e.note("%d aimed kills waited 2 s for their log line in vain and struck then", k.missed)
	}
	for _, p := range requiredPhases {
		if k.hits[p] == 0 {
			k.e.problem("no SIGKILL landed %s: that kill point was not tested", p)
		}
	}
}

// sigstop: two watchers of the agent, on two "hosts" (bindfs views). The
// one running the CLI is stopped for longer than --claim-grace, so the
// other takes its claim over, then resumed: it must not post a second
// reply.
func sigstop(ctx context.Context, e *env) error {
	n, stops := e.size(40, 20), e.size(4, 2)
	grace := 3 * time.Second // three heartbeats
	var ws [2]*watchProc
	for i, host := range []string{"host-a", "host-b"} {
		root, err := e.mount(ctx, host)
		if err != nil {
			return err
		}
		o := watchOpts{root: root, label: host, delay: 400 * time.Millisecond, jitter: 200 * time.Millisecond,
			claimGrace: grace, heartbeat: time.Second} // collab watch's minimum
		if ws[i], err = e.startWatcher(ctx, o, true); err != nil {
			return err
		}
	}
	sendRng := newRng(e)
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := e.send(ctx, e.backing, sender, fmt.Sprintf("s3 message %d of %d", i+1, n)); err != nil {
				sent <- err
				return
			}
			if err := sleep(ctx, between(sendRng, 100*time.Millisecond, 400*time.Millisecond)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	working := 0
	for k := range stops {
		if err := sleep(ctx, between(e.rng, 300*time.Millisecond, 1500*time.Millisecond)); err != nil {
			return err
		}
		// Stop the watcher that is running the CLI, if one is (its
		// presence says so); else either.
		victim := ws[k%2]
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
			s, err := presence.Read(tree.Root(e.backing), agent)
			if err == nil && s.Substate == presence.SubWorking {
				if i := pidIndex(ws[:], s.WatcherPID); i >= 0 {
					victim = ws[i]
					working++
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		pause := grace + between(e.rng, time.Second, 3*time.Second)
		e.logf("SIGSTOP %s for %v", victim.label, pause.Round(time.Millisecond))
		victim.signal(syscall.SIGSTOP)
		err := sleep(ctx, pause)
		victim.signal(syscall.SIGCONT)
		e.heal()
		if err != nil {
			return err
		}
	}
	e.note("%d SIGSTOPs of %v+, %d of them while the watcher was running the CLI", stops, grace+time.Second, working)
	if err := <-sent; err != nil {
		return err
	}
	return e.await(ctx, 60*time.Second, grace+3*time.Second)
}

func pidIndex(ws []*watchProc, pid int) int {
	for i, w := range ws {
		if w.pid() == pid {
			return i
		}
	}
	return -1
}

// negativeCache: the watcher's mount caches failed lookups for 15 s
// (negative_timeout). Just before each message is created through another
// mount, its name is looked up on the watcher's mount, so the watcher's
// listing shows a name that open() cannot find for a while. Each message
// must still be answered, once.
func negativeCache(ctx context.Context, e *env) error {
	const negative = 15 * time.Second
	n := e.size(20, 8)
	wroot, err := e.mount(ctx, "watcher-host", "-o", fmt.Sprintf("negative_timeout=%d", int(negative.Seconds())))
	if err != nil {
		return err
	}
	sroot, err := e.mount(ctx, "sender-host")
	if err != nil {
		return err
	}
	if _, err := e.startWatcher(ctx, watchOpts{root: wroot}, true); err != nil {
		return err
	}
	wr := &channel.Writer{Root: tree.Root(sroot)}
	cached := 0
	for i := range n {
		now := time.Now().UTC()
		id := channel.NewID(sender, now, fmt.Sprintf("%04x", e.rng.IntN(1<<16)))
		probe := filepath.Join(tree.Root(wroot).Channel(chanName), id+".json")
		if _, err := os.Lstat(probe); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("probe %s before it exists: %v", id, err)
		}
		m := &channel.Message{ID: id, Timestamp: now.Format(channel.TimeFormat), From: sender,
			Content: channel.Content{Text: fmt.Sprintf("s6 message %d of %d", i+1, n)}}
		if _, err := e.post(wr, m); err != nil {
			return err
		}
		if _, err := os.Lstat(probe); errors.Is(err, fs.ErrNotExist) {
			cached++ // the watcher's mount does not see it yet
		}
		if err := sleep(ctx, between(e.rng, 100*time.Millisecond, 600*time.Millisecond)); err != nil {
			return err
		}
	}
	e.note("%d of %d names still ENOENT on the watcher's mount right after they were created (negative_timeout=%v)", cached, n, negative)
	if cached == 0 {
		e.problem("the negative lookup cache never hid a message: the scenario tested nothing")
	}
	return e.await(ctx, 75*time.Second, 2*time.Second)
}

// staleAttrs: the watcher's mount caches attributes and entries for 20 s,
// so the channel folder's attributes it sees lag the writes made through
// another mount; it must still answer every message once (within its
// full-rescan interval). Messages are spaced wider than the reader's 2 s
// settle window, so the watcher's own replies do not refresh the cache for
// the next one.
func staleAttrs(ctx context.Context, e *env) error {
	n := e.size(14, 6)
	wroot, err := e.mount(ctx, "watcher-host", "-o", "attr_timeout=20,entry_timeout=20")
	if err != nil {
		return err
	}
	sroot, err := e.mount(ctx, "sender-host")
	if err != nil {
		return err
	}
	if _, err := e.startWatcher(ctx, watchOpts{root: wroot, poll: 500 * time.Millisecond}, true); err != nil {
		return err
	}
	proot, err := e.mount(ctx, "checker-host", "-o", "attr_timeout=0,entry_timeout=0")
	if err != nil {
		return err
	}
	dir := tree.Root(wroot).Channel(chanName)
	stopPresence := make(chan struct{})
	presenceDone := make(chan error, 1)
	go func() { presenceDone <- presenceRewrites(ctx, e, proot, wroot, stopPresence) }()
	stale := 0
	for i := range n {
		before, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if _, err := e.send(ctx, sroot, sender, fmt.Sprintf("s7 message %d of %d", i+1, n)); err != nil {
			return err
		}
		if after, err := os.Stat(dir); err == nil && after.ModTime().Equal(before.ModTime()) {
			stale++ // the watcher's mount still shows the folder as it was
		}
		if err := sleep(ctx, between(e.rng, 3*time.Second, 6*time.Second)); err != nil {
			return err
		}
	}
	close(stopPresence)
	if err := <-presenceDone; err != nil {
		return err
	}
	e.note("%d of %d sends left the folder's mtime unchanged on the watcher's mount", stale, n)
	if stale == 0 {
		e.problem("the attribute cache never hid a change: the scenario tested nothing")
	}
	return e.await(ctx, 80*time.Second, 2*time.Second)
}

// readdirRace: 16 writers publish into the channel at once (link and
// rename into the folder the watcher lists), each a numbered sequence.
// One message in 40 is for the agent and must be answered once; every
// message must be noticed by the watcher exactly once (its log has one
// "queued" or "skip" line per message id): no gap, no duplicate.
func readdirRace(ctx context.Context, e *env) error {
	const writers, oneIn = 16, 40
	per := e.size(500, 100)
	if _, err := e.startWatcher(ctx, watchOpts{root: e.backing}, true); err != nil {
		return err
	}
	wr := &channel.Writer{Root: tree.Root(e.backing)}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = make([]error, writers)
	)
	e.posted = make(map[string]string)
	start := time.Now()
	for k := range writers {
		from := fmt.Sprintf("w%02d", k)
		rng := newRng(e)
		wg.Go(func() {
			for i := range per {
				text := fmt.Sprintf("s8 %s #%d", from, i)
				if i%oneIn == k%oneIn {
					if _, err := e.post(wr, &channel.Message{From: from, Content: channel.Content{Text: text}}); err != nil {
						errs[k] = err
						return
					}
				} else {
					m := &channel.Message{From: from, SessionID: chanName, To: channel.Broadcast, Content: channel.Content{Text: text}}
					if err := wr.Post(m); err != nil {
						errs[k] = err
						return
					}
				}
				mu.Lock()
				e.posted[text] = ""
				mu.Unlock()
				if rng.IntN(8) == 0 {
					time.Sleep(between(rng, 0, 3*time.Millisecond))
				}
			}
		})
	}
	wg.Wait()
	e.note("%d messages (%d for the agent) posted by %d writers in %v", writers*per, len(e.acks.snapshot()), writers, time.Since(start).Round(time.Millisecond))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return e.await(ctx, 110*time.Second-time.Since(start), 2*time.Second)
}

// noticedOnce checks scenario 8's log: every posted message was queued or
// skipped exactly once, and by writer no message is missing.
func noticedOnce(e *env) {
	seen := make(map[string]int) // by id
	err := logLines(e, func(l logLine) {
		if (l.Msg == "queued" || l.Msg == "skip") && l.MsgID != "" {
			seen[l.MsgID]++
		}
	})
	if err != nil {
		e.problem("watcher log: %v", err)
		return
	}
	// The log names ids; map the posted texts to ids through the channel.
	ids, err := idsByText(tree.Root(e.backing).Channel(chanName))
	if err != nil {
		e.problem("read channel: %v", err)
		return
	}
	missing, dup, absent := 0, 0, 0
	var first []string
	for text := range e.posted {
		id, ok := ids[text]
		if !ok {
			absent++
			continue
		}
		switch seen[id] {
		case 0:
			missing++
			if len(first) < 5 {
				first = append(first, "not noticed: "+id+" ("+text+")")
			}
		case 1:
		default:
			dup++
			if len(first) < 5 {
				first = append(first, fmt.Sprintf("noticed %d times: %s", seen[id], id))
			}
		}
	}
	e.note("watcher log: %d of %d posted messages noticed once, %d never, %d more than once", len(e.posted)-missing-dup-absent, len(e.posted), missing, dup)
	if absent > 0 {
		e.problem("%d posted messages are not in the channel folder", absent)
	}
	if missing > 0 || dup > 0 {
		e.problem("readdir gap or duplicate: %s", strings.Join(first, "; "))
	}
}

// idsByText maps the text of every message in dir to its id.
func idsByText(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(entries))
	for _, ent := range entries {
		name := ent.Name()
		if _, err := channel.ParseName(name); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		m, err := channel.Decode(data, name, chanName)
		if err != nil {
			continue
		}
		out[m.Content.Text] = m.Key()
	}
	return out, nil
}

// logLine is one JSON line of the watcher's log.
type logLine struct {
	Msg       string `json:"msg"`
	Level     string `json:"level"`
	MsgID     string `json:"msg_id"`
	File      string `json:"file"`
	Reason    string `json:"reason"`
	Takeovers int    `json:"takeovers"`
	ReplyID   string `json:"reply_id"`
	raw       []byte
}

// logSummary notes how often the watchers took a claim over or held back a
// reply, which shows that a fault reached the paths it is meant to test.
// It also checks each "not posting: the reply is already posted": the
// message it names must be a reply to that message; one that answers
// another message is a clash of reply names that left the message
// unanswered (a problem, which the checker also counts as lost).
func logSummary(e *env) {
	counts := make(map[string]int)
	root := tree.Root(e.backing)
	err := logLines(e, func(l logLine) {
		if l.Msg == "not posting: the reply is already posted" && l.ReplyID != "" {
			if r, err := channel.Lookup(root, chanName, l.ReplyID); err == nil && r.Metadata.InReplyTo != l.MsgID {
				e.problem("reply name clash: %s was not answered because its reply's random name %s is taken by the reply to %s",
					l.MsgID, l.ReplyID, r.Metadata.InReplyTo)
			}
		}
		switch {
		case l.Msg == "claimed" && l.Takeovers > 0:
			counts["claims taken over"]++
		case l.Msg == "claimed":
			counts["claimed"]++
		case l.Msg == "held by another watcher", l.Msg == "claim lost; not posting",
			l.Msg == "not posting: the reply was posted by another watcher", l.Msg == "claim taken over; stopping the CLI":
			counts[fmt.Sprintf("%q", l.Msg)]++
		}
	})
	if err != nil {
		return
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	if len(counts) > 1 || counts["claimed"] == 0 && len(counts) > 0 {
		e.note("watcher log: %s", strings.Join(parts, ", "))
	}
}

// logLines calls f with each line of the agent's JSON log.
func logLines(e *env, f func(logLine)) error {
	file, err := os.Open(e.logPath())
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		l.raw = sc.Bytes()
		f(l)
	}
	return sc.Err()
}
