// Command collab-bench measures collab against the performance targets of
// its issue on this machine. It prints one table (figure, value, target,
// result) and writes the same as JSON. Each value is the median over
// several runs (-runs, default 3).
//
// Usage:
//
//	go run ./internal/dev/bench [-runs N] [-json FILE] [-quick] [-only PARTS] [-collab BIN] [-nfs-ops N]
//
// Everything it writes goes to a folder made with os.MkdirTemp, removed at
// the end; bindfs mounts and child processes are ended on exit and on the
// first SIGINT or SIGTERM (a second one exits at once and may leave them).
//
// # Figures
//
//   - Dispatch latency, "message visible → CLI started", p50 and p99 over
//     the messages of a run (one warm-up message first, not counted).
//     Visible is the moment channel.Writer.Post returns (with NATS: the
//     moment natsbus.Bus.PublishMessage returns after it); a watcher woken
//     by inotify as the name appears can start the CLI before Post has
//     fsynced the folder and returned, so a latency can be negative; CLI started is
//     the call of the watcher's Runner, an in-process fake that records the
//     time and answers at once. Each message waits for the reply to the one
//     before. Three layouts, the watcher configured as collab watch would
//     be (poll 1 s, fsnotify, info logs to a file) but with the rate guards
//     off:
//     (a) sender and watcher on one folder, the watcher woken by fsnotify;
//     each message 50–150 ms after the last reply.
//     (b) two bindfs views of one folder as two hosts (bindfs defaults:
//     FUSE caches attributes for 1 s), the watcher on view A and the sender
//     on view B, so only polling finds the message. Each message comes as
//     chat does, after the channel has been quiet for 3 s (past the
//     reader's 2 s settle time, when an idle watcher stops listing a folder
//     whose attributes look unchanged), at a random point of the poll
//     cycle. Slow (about 4 s a message), so the runs go side by side.
//     (c) as (b) with an embedded nats-server and the JetStream stream
//     (as deployed: publishes wait for the stream's ack); the sender
//     publishes each message after its file, the watcher has natsbus.Waker
//     and Announce; gaps as in (a).
//   - send --wait on the mount, "reply landed → wait returned", p50 and
//     p99: service.Mount.ExpectReply, the question posted, Waiter.Wait
//     (poll 1 s, woken by fsnotify on the channel's folder) in a
//     goroutine; the reply posted with channel.Writer.Post 50–150 ms later
//     (landed: Post returned; a wait woken as the name appears can return
//     before that, so a figure can be negative), until Wait returns it.
//     Again polling only: the same reader (delegate.Before, WaitWith)
//     without wakes, as the wait was before it had them, the reply at a
//     random point of the poll cycle; slow (about a second a reply), so
//     the runs go side by side.
//   - Sign and verify, in-process, per message, for a 1 KiB and a 1 MB
//     message: channel.Message.Sign with a signing.Signer; Message.Verify
//     with a new signing.Verifier over a keyring each time (a first check:
//     a digest of the payload and the Ed25519 verification); and
//     Message.Verify again with one Verifier (a remembered check: the
//     digest and a map lookup). The mean over many messages per run; no
//     target (the targets that matter are the figures below, measured with
//     every message and heartbeat signed).
//   - Backlog: a channel of 100,000 messages none of which is for the
//     agent, plus one that is, named last, written directly and synced,
//     every one signed by its sender with a key trusted in the fixture's
//     keyring (ROOT/keys). Measured two ways: a watcher started with Replay
//     from the zero time (trust known, verifying against ROOT/keys), from
//     watcher.Run to its CLI being started for that last message (the
//     whole backlog listed, read, decoded, filtered and logged; only the
//     message for it is verified); and channel.Reader.Scan plus
//     Message.IsFor alone, the floor under it.
//   - Idle watcher: `collab watch` itself (poll 1 s, fsnotify) over the
//     backlog channel, one child process per run, all measured side by
//     side over one 60 s window (-quick: 15 s) once idle: utime+stime from
//     /proc/PID/stat, and VmRSS from /proc/PID/status at the end.
//   - Send throughput: `collab send` run once per message, and
//     channel.Writer.Post in-process; no target.
//   - `collab who` over 1,000 agents' presence files, each agent with a
//     key trusted in ROOT/keys and its heartbeat signed (so who verifies
//     1,000 signatures), run as a process: the median of several calls per
//     run, after a warm-up.
//   - Big channel: 100,000 small messages (the backlog's) followed by 400
//     of about 1 MB, the newest (-quick: 10,000 and 40), written once,
//     every one signed as in the backlog. `collab read --limit 5 --json`
//     (which verifies the five messages it prints) run as a process: its
//     wall time, the median of several calls after a warm-up, and its peak
//     RSS, taken from wait4 by a small helper process (this binary
//     re-executed), since a child Go starts with vfork is charged the
//     parent's peak. Then `collab watch` (poll 1 s, fsnotify, rate guards
//     off) with the demo's stand-in (demo/standin) as its command CLI, on
//     that channel and on an empty one, each message to it signed by its
//     sender (whose key both trees trust) and verified by it under trust
//     known: from Writer.Post returning to the reply's file appearing
//     (inotify on the folder), the median over several messages; the
//     difference of the two per run; and the watcher's peak RSS (VmHWM,
//     sampled throughout).
//   - OpenTelemetry (otel.go): the watcher reply of the big channel's
//     figures on an empty channel, with no OTEL_* variable and with OTLP
//     export to an in-process receiver, and the overhead in percent.
//   - Remote (hosts without the mount; see remote.go): an embedded
//     nats-server with the stream on loopback, `collab bridge` processes
//     serving a tree, remote hosts as in-process remote.Clients with their
//     own state folder: send → reply seen remotely (Post to an agent served
//     on the mount by collab watch with the stand-in, until its reply
//     arrives through the stream by Follow), p50 and p99; signed posts per
//     second from 8 remote clients at once through one bridge process and
//     through two; the time for Follow (read --remote --follow) to
//     catch up on 10,000 messages from the stream; and the time for a
//     remote watcher's mirror (watch --remote), stopped while 10,000
//     messages landed, to have them all again, from the stream and, with
//     the stream purged, from the files through the bridge.
//   - NFS operations per watcher (nfsops.go): watchers in this process on
//     one counting FUSE view (package fusecount), idle (poll 1 s, with
//     nfs(5)'s caches, fsnotify, NATS with poll 1 s and 10 s) and busy;
//     the requests an NFS server would get, per second per watcher, fitted
//     as a + b·channels, and the agents one export carries at -nfs-ops.
//   - Scale (scale.go): many collab watch processes with the stand-in on
//     several fusecount views of one tree, with and without NATS: dispatch
//     p50/p99, CPU and RSS per watcher and in all, NFS operations per
//     second, collab who and the dashboard's agents page.
//
// # Caveats
//
// The figures are wall-clock times on a shared machine: anything else
// running (the report records the load averages) moves them, the
// fsync-bound ones most. The backlog is read soon after it is written,
// mostly from the page cache.
//
// The collab binary is built once with go build into the temp folder,
// unless -collab names one. The keyrings are written by the account
// running the bench, so the collab watch children run with
// --allow-writable-keyring. Latency (b) and (c) need bindfs and FUSE;
// without them those figures are reported as errors.
//
// Exit codes: 0 when every figure was measured (a missed target is
// reported, not an error), 1 when some could not be or the run was
// interrupted, 2 for bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/internal/identity/signing"
)

func main() {
	if out := os.Getenv(rusageEnv); out != "" {
		os.Exit(rusageHelper(out, os.Args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default action: a second signal
	// ends the program at once.
	go func() { <-ctx.Done(); stop() }()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// usageError is bad usage: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "collab-bench:", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// sizes are how much each part does per run.
type sizes struct {
	local, poll, nats int           // latency messages per run
	backlog           int           // messages in the backlog channel
	idle              time.Duration // the idle window
	sendProc          int           // collab send processes
	sendPost          int           // in-process posts
	agents            int           // presence files for who
	whoCalls          int           // who calls per run
	bigSmall          int           // small messages in the big channel
	bigLarge          int           // 1 MB messages after them
	bigReplies        int           // messages to the watcher per run and channel
	signSmall         int           // 1 KiB messages signed and verified per run
	signLarge         int           // 1 MB messages signed and verified per run
	remote            int           // remote send → reply messages per run
	remoteThru        int           // remote posts per throughput run
	remoteCatchup     int           // messages a remote follow catches up on
	waitLocal         int           // send --wait replies per run, fsnotify
	waitPoll          int           // send --wait replies per run, polling only
	nfsWindow         time.Duration // nfsops: requests counted over this window per point
	nfsMax            int           // nfsops: the most channels and watchers in a series
	scale             scaleSize     // the scale part
}

var (
	fullSizes  = sizes{local: 50, poll: 20, nats: 50, backlog: 100_000, idle: 60 * time.Second, sendProc: 300, sendPost: 2000, agents: 1000, whoCalls: 7, bigSmall: 100_000, bigLarge: 400, bigReplies: 10, signSmall: 2000, signLarge: 50, remote: 50, remoteThru: 2000, remoteCatchup: 10_000, waitLocal: 50, waitPoll: 20, nfsWindow: 10 * time.Second, nfsMax: 10, scale: fullScale}
	quickSizes = sizes{local: 10, poll: 5, nats: 10, backlog: 10_000, idle: 15 * time.Second, sendProc: 50, sendPost: 300, agents: 1000, whoCalls: 3, bigSmall: 10_000, bigLarge: 40, bigReplies: 5, signSmall: 500, signLarge: 10, remote: 10, remoteThru: 400, remoteCatchup: 10_000, waitLocal: 10, waitPoll: 5, nfsWindow: 5 * time.Second, nfsMax: 5, scale: quickScale}
)

// part is one group of figures measured together.
type part struct {
	name string
	run  func(*bench, context.Context) []Figure
}

func parts() []part {
	return []part{
		{"latency-local", (*bench).latencyLocal},
		{"latency-poll", (*bench).latencyPoll},
		{"latency-nats", (*bench).latencyNATS},
		{"wait", (*bench).waitReply},
		{"sign", (*bench).sign},
		{"backlog", (*bench).backlog},
		{"idle", (*bench).idle},
		{"send", (*bench).send},
		{"who", (*bench).who},
		{"bigchannel", (*bench).bigchannel},
		{"otel", (*bench).otel},
		{"remote", (*bench).remote},
		{"live-claude", (*bench).liveClaude},
		{"live-codex", (*bench).liveCodex},
		{"live-gemini", (*bench).liveGemini},
		{"join", (*bench).join},
		{"nfsops", (*bench).nfsops},
		{"scale", (*bench).scale},
	}
}

func partNames() []string {
	var names []string
	for _, p := range parts() {
		names = append(names, p.name)
	}
	return names
}

// bench is one run of the command.
type bench struct {
	dir      string // the temp folder
	runs     int
	size     sizes
	progress io.Writer
	mounts   mounts

	collab      string          // the collab binary, once built or given
	backlogRoot string          // the backlog fixture, once written
	bigRoot     string          // the big channel fixture, once written
	bigSigner   *signing.Signer // the big channel's senderAgent, once written
	standin     string          // the stand-in model CLI, once built

	nfsServerOps float64 // the file server's ops/s the capacity figures assume
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	b, o, err := parseArgs(args, getenv, stderr)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "collab-bench-")
	if err != nil {
		return err
	}
	b.dir = dir
	defer func() {
		if err := b.mounts.unmountAll(); err != nil {
			fmt.Fprintln(stderr, "collab-bench:", err)
			return // never remove through a mount still up
		}
		os.RemoveAll(dir)
	}()

	start := time.Now()
	rep := b.measure(ctx, o)
	if err := writeTable(stdout, rep.Figures); err != nil {
		return err
	}
	if path, err := filepath.Abs(o.jsonPath); err == nil {
		o.jsonPath = path
	}
	if err := writeJSON(o.jsonPath, rep); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	fmt.Fprintf(stderr, "collab-bench: wrote %s in %v: %d figure(s), %d over target, %d not measured; load %s\n",
		o.jsonPath, time.Since(start).Round(time.Second), len(rep.Figures), rep.Failures, rep.Errors, rep.LoadAfter)
	switch {
	case ctx.Err() != nil:
		return errors.New("interrupted")
	case rep.Errors > 0:
		return fmt.Errorf("%d figure(s) could not be measured", rep.Errors)
	}
	return nil
}

// options are the flags that are not the bench's own settings.
type options struct {
	jsonPath string
	quick    bool
	parts    []part // the parts to run, in order
}

// parseArgs reads the flags (and $COLLAB_BENCH_COLLAB) into a bench, its
// temp folder not made yet, and the options of the run.
func parseArgs(args []string, getenv func(string) string, stderr io.Writer) (*bench, options, error) {
	var o options
	fs := flag.NewFlagSet("collab-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab-bench [-runs N] [-json FILE] [-quick] [-only PARTS] [-collab BIN]

Measure dispatch latency, sign and verify cost, backlog filtering, idle
CPU and memory, send throughput, collab who, and reading and answering on a
big channel against their targets; print one table and write it as JSON. See the package documentation for what each figure means.

Flags:
`)
		fs.PrintDefaults()
	}
	runs := fs.Int("runs", 0, "runs per figure, whose median is reported (default 3; 1 with -quick)")
	fs.StringVar(&o.jsonPath, "json", "bench.json", "file to write the results to as JSON")
	fs.BoolVar(&o.quick, "quick", false, "one run, smaller sizes and a 15 s idle window")
	only := fs.String("only", "", "comma-separated parts to run (default all): "+strings.Join(partNames(), ", "))
	nfsOps := fs.Float64("nfs-ops", defaultNFSOps, "NFS server operations per second the nfsops capacity figures assume")
	collabBin := fs.String("collab", "", "collab binary to run (env COLLAB_BENCH_COLLAB; default: go build collab/cmd/collab)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, o, err
		}
		return nil, o, &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, o, &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	b := &bench{runs: *runs, size: fullSizes, progress: &lockedWriter{w: stderr}, collab: *collabBin, nfsServerOps: *nfsOps}
	if o.quick {
		b.size = quickSizes
	}
	if b.runs == 0 {
		b.runs = 3
		if o.quick {
			b.runs = 1
		}
	}
	if b.runs < 0 {
		return nil, o, &usageError{"-runs must be positive"}
	}
	if b.collab == "" {
		b.collab = getenv("COLLAB_BENCH_COLLAB")
	}
	o.parts = parts()
	if *only != "" {
		want := strings.Split(*only, ",")
		for _, w := range want {
			if !slices.Contains(partNames(), w) {
				return nil, o, &usageError{fmt.Sprintf("-only: unknown part %q; use %s", w, strings.Join(partNames(), ", "))}
			}
		}
		o.parts = slices.DeleteFunc(o.parts, func(p part) bool { return !slices.Contains(want, p.name) })
	}
	return b, o, nil
}

// measure runs the selected parts in order until ctx ends and reports
// their figures.
func (b *bench) measure(ctx context.Context, o options) *Report {
	rep := &Report{
		Started:    time.Now().UTC().Truncate(time.Second),
		Runs:       b.runs,
		Quick:      o.quick,
		CPUs:       runtime.NumCPU(),
		Go:         runtime.Version(),
		TempDir:    b.dir,
		TempFS:     fsType(b.dir),
		LoadBefore: loadAvg(),
	}
	fmt.Fprintf(b.progress, "collab-bench: %d run(s) per figure, temp folder %s (%s), %d CPUs, load %s\n", b.runs, b.dir, rep.TempFS, rep.CPUs, rep.LoadBefore)
	start := time.Now()
	for _, p := range o.parts {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(b.progress, "== %s\n", p.name)
		rep.Figures = append(rep.Figures, p.run(b, ctx)...)
	}
	rep.Seconds = time.Since(start).Round(time.Second).Seconds()
	rep.LoadAfter = loadAvg()
	rep.count()
	return rep
}

// repeat calls measure once per run and collects its values by figure
// index; the first error stops it.
func (b *bench) repeat(ctx context.Context, what string, nfig int, measure func(run int) ([]float64, error)) ([][]float64, error) {
	out := make([][]float64, nfig)
	for i := range b.runs {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		vals, err := measure(i)
		if err != nil {
			fmt.Fprintf(b.progress, "   %s run %d/%d: %v\n", what, i+1, b.runs, err)
			return out, err
		}
		var parts []string
		for j, v := range vals {
			out[j] = append(out[j], v)
			parts = append(parts, fmt.Sprintf("%.4g", v))
		}
		fmt.Fprintf(b.progress, "   %s run %d/%d: %s\n", what, i+1, b.runs, strings.Join(parts, " "))
	}
	return out, nil
}

// fsType names the filesystem holding path, for the report.
func fsType(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return ""
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay"
	case unix.NFS_SUPER_MAGIC:
		return "nfs"
	case unix.FUSE_SUPER_MAGIC:
		return "fuse"
	}
	return fmt.Sprintf("0x%x", uint32(st.Type))
}

// loadAvg returns the 1, 5 and 15 minute load averages.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// lockedWriter serializes writes: runs side by side report progress at once.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
