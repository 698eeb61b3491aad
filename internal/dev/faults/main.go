// Command collab-faults drives real collab processes through faults and
// scores every run with one checker. It is what `make faults` runs (CI
// too).
//
// Usage:
//
//	go run ./internal/dev/faults [--quick] [--only 2,3,12] [--seed N] [--json FILE] [--collab BIN] [--keep]
//
// It builds collab with go build into a temporary folder (unless --collab
// names a binary) and uses itself as the stand-in model CLI: run as
// "collab-faults __standin", it answers the message COLLAB_MESSAGE_ID with
// "re ID sum HASH", HASH being the start of the SHA-256 of the message's
// text, so every reply can be checked against what was sent.
//
// Each scenario gets a tree of its own (and bindfs views of it, standing
// for NFS hosts with their caches), starts `collab watch` processes for the
// agent "bot" with the stand-in, sends messages with `collab send` or
// channel.Writer (the ack is the send returning), applies its fault, waits
// until every acked message is answered (or a deadline) and a little more
// for late duplicates, stops the watchers, and runs the checker over the
// channel folder.
//
// # The checker
//
// For each acked message id, the replies in the channel whose
// metadata.in_reply_to is the id and whose from is the agent: exactly one is
// ok, none is lost, more than one is duplicated. A reply whose text is not
// the stand-in's answer to what was sent, or a file named as the agent's
// that is not a well-formed message from it, is corrupt. Latency is the
// first reply's JSON time minus the ack.
//
// # Scenarios
//
// Numbers follow the issue.
//
//	 1  `collab send` of large messages SIGKILLed at random points, often
//	    mid-write: no partial message is ever visible (a reader checks each
//	    file as it appears); orphaned temp files survive the watcher's
//	    janitor while young and are removed once older than 36 h
//	 2  watcher SIGKILLed and restarted, while 200 messages arrive; kills
//	    aim at log lines (queued, claimed, running, replied), some at random
//	    times or during start-up; where each landed (before claim, after
//	    claim, during the CLI, after the reply before the state save) is read
//	    from the dead watcher's log and state, counted, and each of the four
//	    must be hit
//	 3  one of two watchers of the agent (two bindfs "hosts") SIGSTOPped
//	    while it runs the CLI, past --claim-grace, then SIGCONTed
//	 4  ENOSPC: the tree is a 16 MB tmpfs, filled while the model thinks,
//	    so replies, state and heartbeats fail; the presence file stays
//	    whole and every reply is posted once when space returns, also
//	    across a watcher restart during the full disk (the outbox); the
//	    watcher's log must show a reply posted from the outbox and never
//	    "replies lost: no room to keep them on disk"
//	 5  permission denied on messages (published whole with mode 000), then
//	    on the channel folder, then on the watcher's state folder (the
//	    watcher runs without CAP_DAC_OVERRIDE when the harness is root):
//	    each logged once, never fatal, all answered once when restored
//	 6  negative lookup cache: the watcher's mount has negative_timeout=15
//	    and looks each name up before another mount creates it
//	 7  stale attribute cache: the watcher's mount has attr_timeout=20 and
//	    entry_timeout=20, senders write through another mount; meanwhile a
//	    presence file is rewritten in place (truncated, half, 50 ms, half)
//	    while `collab who --check` of that AWAKE agent runs in a loop on a
//	    mount that revalidates at open (as NFS close-to-open does): every
//	    check must exit 0. Checks on the 20 s attribute-cache mount are
//	    noted as a limit (the kernel keeps a short read's size until the
//	    cache expires)
//	 8  readdir racing with renames: 16 writers × 500 messages posted at once,
//	    one in 40 for the agent (answered once); the watcher's log must show
//	    every one of the 8,000 noticed exactly once (no gap, no duplicate)
//	 9  clock skew: senders whose names are 5 min behind and 5 min ahead,
//	    interleaved with an on-time one, and a watcher restart in the
//	    middle; meanwhile one writer (8 messages a second) has its clock
//	    jump back 2 s, and each message it posts in a second it used before
//	    the jump first meets a name clash (must fail, EEXIST, and leave the
//	    earlier message whole) and is posted again with a new hex4
//	10  NATS broker with JetStream (a child process) SIGKILLed while
//	    messages and replies are dual-written, left down, restarted on the
//	    same port and store, SIGSTOPped and SIGCONTed; the watcher polls
//	    every 2 s without inotify: files deliver everything, nothing is
//	    answered twice. While the broker is down the harness publishes a
//	    burst larger than nats.go's default reconnect buffer (8 MB) through
//	    natsbus, which keeps no such buffer; at the end the stream
//	    (natsbus.StreamIDs, Parity) must hold no message twice, none without
//	    a file, and nothing published while the broker was down
//	11  the watcher's state file truncated, bit-flipped, emptied or
//	    replaced by garbage between runs, while messages arrive: detected
//	    and set aside; recovery answers what has no reply and nothing twice
//	12  garbage in the channel (0-byte, non-JSON, 50 MB, deeply nested,
//	    invalid UTF-8, odd names, a FIFO, a symlink, a folder, a message
//	    written in place slowly): each logged at most once, never fatal,
//	    the good messages answered once; the watcher's peak resident memory
//	    (VmHWM, sampled every 20 ms) stays under 45 MB, less than the 50 MB
//	    file
//	13  remote senders (three agents, each `collab send --remote` processes
//	    with its own key, --state-dir and a --root that does not exist)
//	    send a burst while one of two `collab bridge` processes is
//	    SIGKILLed and restarted, over and over (every other kill the moment
//	    a bridge logs "bridge: posted": the file written, the answer not
//	    yet sent), once both together; then `collab outbox flush --remote`
//	14  a remote burst while the nats-server child is SIGKILLed, left down
//	    3 s and restarted on its port and store; then the flush
//	15  the remote senders reach NATS through a TCP proxy of the harness,
//	    stopped (listener and connections closed) for 6 s twice while they
//	    send: healed mid-burst, then only after the burst; then the flush
//	16  the agent served by a mounted `collab watch` and a `collab watch
//	    --remote` (its claims, reply tokens and seen files made on the
//	    mount by two bridges, op claimfs) while a writer on the mount sends
//	    a burst: the bridges SIGKILLed and restarted one at a time, two
//	    kills in three the moment a bridge logs "bridge: claimfs" (debug: the
//	    file on the mount, the answer not yet sent); the remote watcher
//	    SIGKILLed once right after it logs "claimed", and restarted. Scored
//	    by the checker, plus: a reply to no message sent, or a file of the
//	    agent not Verified with its key, is corrupt
//	17  the agent served only by `collab watch --remote`, whose NATS
//	    connection goes through a TCP proxy of the harness; a writer on the
//	    mount posts before, during and after a partition of 2 minutes (30 s
//	    with --quick: the proxy stopped, its connections closed). The
//	    watcher must not exit, answer nothing while cut off, and answer the
//	    backlog once healed (how long after is noted). Scored as 16
//	18  `collab watch --live` with the real Claude Code against fakemodel
//	    (in this process, on 127.0.0.1): a burst in one channel, the model
//	    call of the middle message hung, and the CLI process running that
//	    turn (pid from its job record) SIGKILLed; the pool must log the
//	    death, start a process resuming the session and redo the turn
//	    (whose model call carries the first message)
//	19  the same, three channels (three warm CLI processes); the watcher
//	    SIGKILLed while every channel has a turn in flight: no process of
//	    the CLIs' groups may remain 5 s later (Pdeathsig, end of input);
//	    messages sent while it is down, the watcher restarted, each
//	    channel's process resuming its session
//	21  the agent served only by `collab watch --remote` (poll 1 s)
//	    through one bridge; a writer on the mount posts 20 messages while
//	    the bridge is SIGKILLed for 2 s, then restarted: every message
//	    must be answered, its reply on the mount, within 5 s of the
//	    bridge serving again
//	22  the same with the nats-server SIGKILLed for 2 s and restarted on
//	    its port and store: within 5 s of it being ready
//	23  two bridges side by side (queue group collab-bridge), one
//	    SIGKILLed for good a third into a remote burst (right after it
//	    logged a post): the other carries every send on; scored as 13
//	24  a three-node NATS cluster (this binary re-executed as nodes
//	    routed to each other) and the stream with three replicas; three
//	    remote senders, the agent's remote watcher and a bridge, all given
//	    the three URLs; the node leading the stream SIGKILLed for good a
//	    third into the burst. Scored as 13 and as 16 together
//	    (clusterVerdict): every send on the mount once, answered once
//	25  the same with the leader SIGSTOPped (cut off from the others and
//	    its clients) for 8 s, then SIGCONTed
//
// Scenarios 13-15 are scored from the files instead of replies
// (remoteCheck): every message a remote sender tried (exit 0 with its id,
// or 5: queued) and every entry its outbox held before the flush is in the
// channel exactly once, with its text, under the id it was told or
// queued; no other file from the senders. Each fails when a send exits
// other than 0 or 5, a flush leaves entries, or the fault queued nothing.
//
// Scenarios 18 and 19 need the real Claude Code ($COLLAB_CLI_BIN_DIR,
// then /tmp/npmcli/node_modules/.bin, then PATH): without it they are
// skipped, or fail when $COLLAB_TEST_REQUIRE_CLIS is 1 (CI). The fake
// model answers as the stand-in does (the message's id read from the
// prompt), so the checker scores them as any other.
//
// # Time to recover
//
// Each scenario records when its fault heals (env.heal: the process
// restarted, the partition healed, the disk freed; for a fault that
// never heals, a process killed for good, when it struck; for one over
// every send, a cache or a race, the last send). RECOVER (recover_ns in
// --json) is from then to the last message answered, or, for a message
// sent after it, from its send: the longest any message waited past the
// healing (a burst that goes on after it does not count its length).
// Answered is the first reply's time or, when later, the reply file's
// mtime (when a bridge wrote it on the mount); for the remote senders'
// files, the file's mtime against the time in its name. 0 when every
// message was answered before the heal; "-" when nothing healed.
//
// Seeds are fixed (--seed, default 1). --quick sends fewer messages. Each
// scenario has 2 minutes (17: 4 minutes, its partition alone lasts 2);
// one that takes longer fails. Every scenario also
// fails when a watcher exits by itself or does not stop cleanly on SIGTERM,
// and notes what its watchers' logs say about claims taken over and
// replies held back, which shows the fault reached the code it aims at.
//
// Exit codes: 0 when every scenario ran with nothing lost, duplicated or
// corrupt and no other invariant broken; 1 otherwise; 2 for bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fusemount"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == standinArg {
		os.Exit(standin(os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == natsArg {
		os.Exit(natsChild(os.Args[2:], os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "collab-faults:", err)
		os.Exit(2)
	case errors.Is(err, errFailed):
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "collab-faults:", err)
		os.Exit(1)
	}
}

type usageError struct{ error }

// errSkip: a scenario cannot run on this machine (it needs root, say).
// When require names a variable, the skip is a failure if it is "1" (as
// $COLLAB_TEST_REQUIRE_CLIS for the real model CLIs); else it is one
// when $COLLAB_TEST_REQUIRE_BINDFS is "1" and the harness runs as root
// (CI).
type errSkip struct{ why, require string }

func (e errSkip) Error() string { return e.why }

// fails reports whether the skip is a failure here, the harness running
// with user id euid.
func (e errSkip) fails(getenv func(string) string, euid int) bool {
	if e.require != "" {
		return getenv(e.require) == "1"
	}
	return getenv("COLLAB_TEST_REQUIRE_BINDFS") == "1" && euid == 0
}

// errFailed: some run lost, duplicated or corrupted a message, or broke
// another invariant; the table says which.
var errFailed = errors.New("collab-faults: faults found")

// result is one scenario's line of the report.
type result struct {
	ID      string        `json:"id"`
	Name    string        `json:"name"`
	Skipped string        `json:"skipped,omitempty"`
	Error   string        `json:"error,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Verdict verdict       `json:"verdict"`
	// Healed is when the fault healed (or struck, for one that never
	// heals); Recover is from then to the last message answered (0 when
	// all were answered before).
	Healed   time.Time     `json:"healed,omitzero"`
	Recover  time.Duration `json:"recover_ns"`
	Notes    []string      `json:"notes,omitempty"`
	Problems []string      `json:"problems,omitempty"`
}

func (r result) failed() bool {
	return r.Error != "" || len(r.Problems) > 0 || r.Verdict.failed()
}

// options are collab-faults' flags.
type options struct {
	quick   bool
	seed    uint64
	jsonOut string
	collab  string
	keep    bool
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, list, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	dir, err := os.MkdirTemp("", "collab-faults-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(stderr, "run folder:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	h, err := newHarness(ctx, o, dir, stderr)
	if err != nil {
		return err
	}
	results := h.runAll(ctx, list, getenv("COLLAB_TEST_REQUIRE_BINDFS") == "1")
	total := time.Since(start)

	report(stdout, results, total)
	if o.jsonOut != "" {
		if err := writeResults(o, total, results); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if slices.ContainsFunc(results, result.failed) {
		return errFailed
	}
	return nil
}

// parseArgs reads the flags and picks the scenarios to run.
func parseArgs(args []string, stderr io.Writer) (options, []scenario, error) {
	var o options
	fs := pflag.NewFlagSet("collab-faults", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: collab-faults [flags]\n\nDrives collab watch and send through faults and checks that every acked message is answered exactly once.\n\nFlags:\n%s", fs.FlagUsages())
	}
	fs.BoolVar(&o.quick, "quick", false, "fewer messages per scenario")
	only := fs.StringSlice("only", nil, "scenarios to run, by number (comma-separated; default all)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of every random choice")
	fs.StringVar(&o.jsonOut, "json", "bin/faults.json", "write the results as JSON to this file (empty: none)")
	fs.StringVar(&o.collab, "collab", "", "collab binary to use instead of building one")
	fs.BoolVar(&o.keep, "keep", false, "keep the run folder (trees, logs) and print its path")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return o, nil, err
		}
		return o, nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return o, nil, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	var list []scenario
	for _, s := range scenarios {
		if len(*only) == 0 || slices.Contains(*only, s.id) {
			list = append(list, s)
		}
	}
	for _, id := range *only {
		if !slices.ContainsFunc(scenarios, func(s scenario) bool { return s.id == id }) {
			return o, nil, usageError{fmt.Errorf("--only: no scenario %q", id)}
		}
	}
	return o, list, nil
}

// newHarness builds collab into dir unless given one and checks for
// bindfs.
func newHarness(ctx context.Context, o options, dir string, progress io.Writer) (*harness, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	h := &harness{collab: o.collab, self: self, dir: dir, quick: o.quick, seed: o.seed, progress: progress}
	if h.collab == "" {
		h.collab = filepath.Join(dir, "collab")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", h.collab, "github.com/collabdev/collab/cmd/collab")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build collab/cmd/collab (run from the collab module, or use --collab): %v: %s", err, out)
		}
	}
	h.noBindfs = fusemount.Works(dir)
	return h, nil
}

// runAll runs the scenarios in order until ctx ends. One that needs bindfs
// is skipped without it, or fails when requireBindfs is set.
func (h *harness) runAll(ctx context.Context, list []scenario, requireBindfs bool) []result {
	var results []result
	for _, s := range list {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(h.progress, "== %s %s\n", s.id, s.name)
		r := result{ID: s.id, Name: s.name}
		if s.bindfs && h.noBindfs != nil {
			r.Skipped = fmt.Sprintf("bindfs unavailable: %v", h.noBindfs)
			if requireBindfs {
				r.Error = r.Skipped
			}
			results = append(results, r)
			continue
		}
		t0 := time.Now()
		r = runScenario(ctx, h, s)
		r.Elapsed = time.Since(t0)
		if b := s.limit(); r.Elapsed > b {
			r.Problems = append(r.Problems, fmt.Sprintf("took %v, over the %v budget", r.Elapsed.Round(time.Second), b))
		}
		results = append(results, r)
	}
	return results
}

// writeResults writes the run's results as JSON to o.jsonOut.
func writeResults(o options, total time.Duration, results []result) error {
	data, err := json.MarshalIndent(struct {
		Seed    uint64        `json:"seed"`
		Quick   bool          `json:"quick"`
		Elapsed time.Duration `json:"elapsed_ns"`
		Results []result      `json:"results"`
	}{o.seed, o.quick, total, results}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.jsonOut), 0o777); err != nil {
		return err
	}
	return os.WriteFile(o.jsonOut, append(data, '\n'), 0o666)
}

// runScenario runs one scenario in a tree of its own and scores it.
func runScenario(ctx context.Context, h *harness, s scenario) result {
	r := result{ID: s.id, Name: s.name}
	ctx, cancel := context.WithTimeout(ctx, s.limit())
	defer cancel()
	// Each scenario's random stream depends on the seed and its number
	// alone, so --only does not change it.
	stream, _ := strconv.ParseUint(s.id, 10, 64)
	e, err := h.newEnv("s"+s.id, stream)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer e.close()
	if err := s.run(ctx, e); err != nil {
		var skip errSkip
		if errors.As(err, &skip) {
			r.Skipped = skip.why
			switch {
			case !skip.fails(os.Getenv, os.Geteuid()):
			case skip.require != "":
				r.Skipped, r.Error = "", fmt.Sprintf("%s (required: %s=1)", skip.why, skip.require)
			default:
				r.Error = skip.why // CI as root: nothing may be skipped
			}
			return r
		}
		r.Error = err.Error()
	}
	// Stop the watchers: a clean stop must be possible after any fault, and
	// a reply posted during shutdown is counted too.
	e.mu.Lock()
	ws := slices.Clone(e.watchers)
	e.mu.Unlock()
	for _, w := range ws {
		switch {
		case w.exited() && !w.ended:
			e.problem("watcher %s (pid %d) exited by itself: %v: %s", w.label, w.pid(), w.err, tailFile(w.log, 300))
		case w.exited():
		case !w.terminate(10 * time.Second):
			e.problem("watcher %s (pid %d) did not stop within 10 s of SIGTERM", w.label, w.pid())
		case w.err != nil:
			e.problem("watcher %s (pid %d) exited with %v on SIGTERM: %s", w.label, w.pid(), w.err, tailFile(w.log, 300))
		}
	}
	logSummary(e)
	if s.after != nil {
		s.after(e)
	}
	score := func(e *env) (verdict, error) {
		return check(tree.Root(e.backing).Channel(chanName), chanName, agent, e.acks.snapshot())
	}
	if s.verdict != nil {
		score = s.verdict
	}
	v, err := score(e)
	if err != nil && r.Error == "" {
		r.Error = err.Error()
	}
	r.Verdict = v
	if r.Healed = e.healedAt(); !r.Healed.IsZero() && !v.Last.IsZero() {
		r.Recover = v.recover(r.Healed)
	}
	r.Notes, r.Problems = e.notes, e.problems
	return r
}

// report prints the table, then the details of what went wrong.
func report(w io.Writer, results []result, total time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMESSAGES\tLOST\tDUPLICATED\tCORRUPT\tMAX LATENCY\tP50\tRECOVER\tTOOK\tRESULT")
	for _, r := range results {
		status := "ok"
		switch {
		case r.Skipped != "" && r.Error == "":
			status = "skipped"
		case r.failed():
			status = "FAIL"
		}
		v := r.Verdict
		rec := "-"
		if !r.Healed.IsZero() && !v.Last.IsZero() {
			rec = r.Recover.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s %s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, v.Messages, v.Lost, v.Duplicated, v.Corrupt,
			v.MaxLatency.Round(time.Millisecond), v.P50Latency.Round(time.Millisecond), rec, r.Elapsed.Round(100*time.Millisecond), status)
	}
	tw.Flush()
	fmt.Fprintf(w, "total %v\n", total.Round(100*time.Millisecond))
	for _, r := range results {
		var lines []string
		for _, s := range []string{r.Skipped, r.Error} {
			if s != "" {
				lines = append(lines, s)
			}
		}
		for _, p := range r.Problems {
			lines = append(lines, "problem: "+p)
		}
		lines = append(lines, r.Verdict.Details...)
		for _, n := range r.Notes {
			lines = append(lines, "note: "+n)
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s %s:\n  %s\n", r.ID, r.Name, strings.Join(lines, "\n  "))
		}
	}
}
