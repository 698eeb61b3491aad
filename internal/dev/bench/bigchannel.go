package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// bigReadLimit is read --limit's N in the big channel's figures.
const bigReadLimit = 5

// bigFixture writes, once, a channel of b.size.bigSmall small messages (the
// backlog's, for none of the bench's agents) followed by b.size.bigLarge
// broadcasts of about 1 MB, the newest, every one signed by its sender
// (keys trusted in ROOT/keys; the watcher's correspondent's signer is kept
// in b.bigSigner), and returns its root. Files are written directly (no
// fsync), 1 s apart in name time, ending a minute ago.
func (b *bench) bigFixture() (tree.Root, error) {
	if b.bigRoot != "" {
		return tree.Root(b.bigRoot), nil
	}
	root := tree.Root(filepath.Join(b.dir, "bigchannel"))
	dir := root.Channel(backlogChannel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	start := time.Now()
	signers, err := trustKeys(root, backlogSenders)
	if err != nil {
		return "", fmt.Errorf("big channel fixture: %w", err)
	}
	small, large := b.size.bigSmall, b.size.bigLarge
	first := time.Now().UTC().Truncate(time.Second).Add(-time.Duration(small+large+60) * time.Second)
	text := strings.Repeat("a long paste: log lines, a diff, a document. ", channel.MaxMessageSize/46)
	jobs := make(chan int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range jobs {
				m := backlogMessage(first, i, small+large)
				if i >= small {
					m.Content.Text = text
				}
				err := m.Sign(signers[m.From])
				var data []byte
				if err == nil {
					data, err = m.Encode()
				}
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, m.ID+".json"), data, 0o644)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range small + large {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return "", fmt.Errorf("big channel fixture: %w", err)
	default:
	}
	if err := syncFS(dir); err != nil {
		return "", fmt.Errorf("big channel fixture: %w", err)
	}
	fmt.Fprintf(b.progress, "   fixture: %s small and %d 1 MB messages signed, written and synced in %v\n", thousands(small), large, time.Since(start).Round(time.Millisecond))
	b.bigRoot, b.bigSigner = string(root), signers[senderAgent]
	return root, nil
}

func (b *bench) bigchannel(ctx context.Context) []Figure {
	small, large, n := b.size.bigSmall, b.size.bigLarge, b.size.bigReplies
	what := fmt.Sprintf("%s small + %d × 1 MB signed msgs", thousands(small), large)
	readT := spec{name: fmt.Sprintf("read --limit %d, %s (collab read process)", bigReadLimit, what), unit: "ms", max: 100,
		note: fmt.Sprintf("wall time of collab read --limit %d as a process, exec included, the newest messages being the 1 MB ones, each verified against ROOT/keys; median of %d calls per run after one warm-up", bigReadLimit, b.size.whoCalls)}
	readM := spec{name: fmt.Sprintf("read --limit %d peak RSS, %s", bigReadLimit, what), unit: "MB", max: 40,
		note: "the largest peak RSS (wait4's Maxrss, taken by a small helper process) of as many more calls (MB = 10^6 bytes)"}
	bigR := spec{name: "watcher reply, " + what, unit: "ms",
		note: fmt.Sprintf("collab watch (poll 1 s, fsnotify, trust known) with the demo's stand-in as its command CLI: from a signed Writer.Post returning to the reply's file appearing (inotify); median of %d messages per run, each 200–400 ms after the last reply", n)}
	emptyR := spec{name: "watcher reply, empty channel", unit: "ms",
		note: "the same on a channel with no message before (the sender's key trusted there too)"}
	diff := spec{name: "watcher reply: " + what + " − empty", unit: "ms", max: 50,
		note: "the difference of the two figures above, per run"}
	rss := spec{name: "watcher peak RSS, " + what, unit: "MB", max: 45,
		note: "VmHWM of that collab watch (its peak from start, sampled every 50 ms with VmRSS) at the end of its run (MB = 10^6 bytes)"}
	fail := func(err error) []Figure {
		return []Figure{readT.figure(nil, err), readM.figure(nil, err), bigR.figure(nil, err), emptyR.figure(nil, err), diff.figure(nil, err), rss.figure(nil, err)}
	}
	root, err := b.bigFixture()
	if err != nil {
		return fail(err)
	}
	bin, err := b.collabBinary(ctx)
	if err != nil {
		return fail(err)
	}
	rv, rerr := b.repeat(ctx, "read --limit ms MB", 2, func(int) ([]float64, error) {
		return b.bigRead(ctx, bin, root, b.size.whoCalls)
	})
	out := []Figure{readT.figure(rv[0], rerr), readM.figure(rv[1], rerr)}
	standin, err := b.standinBinary(ctx)
	if err != nil {
		return append(out, bigR.figure(nil, err), emptyR.figure(nil, err), diff.figure(nil, err), rss.figure(nil, err))
	}
	empty := tree.Root(filepath.Join(b.dir, "emptychannel"))
	if err := os.MkdirAll(empty.Channel(backlogChannel), 0o755); err != nil {
		return append(out, bigR.figure(nil, err), emptyR.figure(nil, err), diff.figure(nil, err), rss.figure(nil, err))
	}
	if err := keyring.Open(empty.Keys()).Trust(senderAgent, b.bigSigner.PublicKey()); err != nil {
		return append(out, bigR.figure(nil, err), emptyR.figure(nil, err), diff.figure(nil, err), rss.figure(nil, err))
	}
	wv, werr := b.repeat(ctx, "watcher reply big empty diff ms, RSS MB", 4, func(run int) ([]float64, error) {
		agent := "bigbot-" + strconv.Itoa(run+1)
		big, peak, err := replyLatency(ctx, bin, standin, root, b.bigSigner, agent, n)
		if err != nil {
			return nil, err
		}
		none, _, err := replyLatency(ctx, bin, standin, empty, b.bigSigner, agent, n)
		if err != nil {
			return nil, err
		}
		return []float64{big, none, big - none, peak}, nil
	})
	return append(out, bigR.figure(wv[0], werr), emptyR.figure(wv[1], werr), diff.figure(wv[2], werr), rss.figure(wv[3], werr))
}

// rusageEnv, when set, makes this binary run its arguments as a command
// and write the command's peak RSS (kB) to the file the variable names.
//
// The bench cannot take a child's peak RSS from its own wait4: Go starts a
// child with vfork, sharing the parent's memory until exec, and Linux
// counts the parent's peak in the child's (exec_mmap). This helper starts
// small, so its own peak, counted in its child's, is below the child's.
const rusageEnv = "COLLAB_BENCH_RUSAGE_OUT"

func rusageHelper(out string, argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "collab-bench: no command")
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, rusageEnv+"=") })
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "collab-bench:", err)
		return 1
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil || os.WriteFile(out, []byte(strconv.FormatInt(ru.Maxrss, 10)), 0o644) != nil {
		return 1
	}
	return cmd.ProcessState.ExitCode()
}

// peakRSS runs argv through the rusage helper and returns its peak RSS in
// kB.
func (b *bench) peakRSS(ctx context.Context, argv ...string) (int64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	out := filepath.Join(b.dir, "rusage")
	cmd := exec.CommandContext(ctx, self, argv...)
	cmd.Env = append(childEnv(), rusageEnv+"="+out)
	cmd.WaitDelay = 5 * time.Second
	stderr := &capped{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Run(); err != nil {
		return 0, &runError{argv: argv, err: err, stderr: stderr.String()}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(data), 10, 64)
}

// bigRead runs collab read --limit bigReadLimit calls+1 times (the first a
// warm-up) and returns the median wall time (ms) of the rest, then calls
// more times through the rusage helper and returns the largest peak RSS
// (MB).
func (b *bench) bigRead(ctx context.Context, bin string, root tree.Root, calls int) ([]float64, error) {
	var ds []float64
	var peak int64
	argv := []string{bin, "read", "--root", string(root), "--channel", backlogChannel, "--limit", strconv.Itoa(bigReadLimit), "--json"}
	for range calls {
		kb, err := b.peakRSS(ctx, argv...)
		if err != nil {
			return nil, err
		}
		peak = max(peak, kb)
	}
	for i := range calls + 1 {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = childEnv()
		cmd.WaitDelay = 5 * time.Second
		stdout, stderr := &capped{max: 16 << 20}, &capped{max: 64 << 10}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		t0 := time.Now()
		err := cmd.Run()
		took := time.Since(t0)
		if err != nil {
			return nil, &runError{argv: cmd.Args, err: err, stderr: stderr.String()}
		}
		if lines := strings.Count(stdout.String(), "\n"); lines != bigReadLimit {
			return nil, fmt.Errorf("collab read --limit %d printed %d lines", bigReadLimit, lines)
		}
		if i == 0 {
			continue
		}
		ds = append(ds, ms(took))
	}
	return []float64{median(ds), float64(peak) * 1024 / 1e6}, nil
}

// binaries builds (once each) collab and the stand-in model: what a part
// that runs collab watch with the stand-in needs.
func (b *bench) binaries(ctx context.Context) (bin, standin string, err error) {
	if bin, err = b.collabBinary(ctx); err != nil {
		return "", "", err
	}
	standin, err = b.standinBinary(ctx)
	return bin, standin, err
}

// standinBinary returns demo/standin, built once into the temp folder.
func (b *bench) standinBinary(ctx context.Context) (string, error) {
	if b.standin != "" {
		return b.standin, nil
	}
	bin := filepath.Join(b.dir, "bin", "standin")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/collabdev/collab/demo/standin")
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build collab/demo/standin (run from the collab module): %v: %s", err, tail(string(out), 1000))
	}
	b.standin = bin
	return bin, nil
}

// replyLatency starts collab watch for agent on root's backlog channel with
// the stand-in, sends it n messages signed by signer one after another,
// and returns the median time (ms) from each Post returning to the reply's
// file appearing, and the watcher's peak RSS (MB) over its whole life.
func replyLatency(ctx context.Context, bin, standin string, root tree.Root, signer *signing.Signer, agent string, n int) (lat, peakMB float64, err error) {
	dir := root.Channel(backlogChannel)
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return 0, 0, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		return 0, 0, fmt.Errorf("inotify: %w", err)
	}
	events := os.NewFile(uintptr(fd), "inotify") // non-blocking: Close ends a Read
	names := make(chan string, 64)
	go readInotify(events, names)
	defer events.Close()

	w, err := startWatch(root, bin, agent, standin)
	if err != nil {
		return 0, 0, err
	}
	defer w.stop()
	var hwm int64
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if kb, err := statusKB(w.cmd.Process.Pid, "VmHWM"); err == nil {
				hwm = max(hwm, kb)
			}
			if kb, err := statusKB(w.cmd.Process.Pid, "VmRSS"); err == nil {
				hwm = max(hwm, kb)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	defer func() {
		select {
		case <-stopSampling:
		default:
			close(stopSampling)
			<-sampled
		}
	}()
	if err := waitIdle(ctx, root, []*idleWatcher{w}); err != nil {
		return 0, 0, err
	}
	wr := &channel.Writer{Root: root, Signer: signer}
	var ds []float64
	for i := range n {
		if err := sleep(ctx, 200*time.Millisecond+time.Duration(i%3)*100*time.Millisecond); err != nil {
			return 0, 0, err
		}
		m := channel.Message{SessionID: backlogChannel, From: senderAgent, To: agent,
			Content: channel.Content{Text: fmt.Sprintf("@%s how is build %d going?", agent, i)}}
		if err := wr.Post(&m); err != nil {
			return 0, 0, err
		}
		t0 := time.Now()
		timeout := time.After(waitLong)
	wait:
		for {
			select {
			case name := <-names:
				if nm, err := channel.ParseName(name); err == nil && nm.Agent == agent {
					ds = append(ds, ms(time.Since(t0)))
					break wait
				}
			case <-timeout:
				return 0, 0, fmt.Errorf("no reply from %s within %v: %s", agent, waitLong, tail(w.stderr.String(), 500))
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			}
		}
	}
	close(stopSampling)
	<-sampled
	return median(ds), float64(hwm) * 1024 / 1e6, nil
}

// startWatch starts collab watch for agent on the backlog channel with
// cliCmd as its command CLI and the rate guard off, accepting the keyring
// the bench wrote (--allow-writable-keyring), in a process group of its
// own, killed if the bench dies.
func startWatch(root tree.Root, bin, agent, cliCmd string) (*idleWatcher, error) {
	cmd := exec.Command(bin, "watch", "--root", string(root), "--agent", agent, "--channel", backlogChannel,
		"--cli", "command", "--cmd", cliCmd, "--poll", "1s", "--rate", "-1", "--pair-rate", "-1", "--allow-writable-keyring")
	cmd.Env = childEnv()
	return startProc(agent, cmd)
}

// readInotify sends the names of the events read from f until it is
// closed.
func readInotify(f *os.File, names chan<- string) {
	buf := make([]byte, 64<<10)
	for {
		k, err := f.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= k; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if s := string(bytes.TrimRight(name, "\x00")); s != "" {
				select {
				case names <- s:
				default: // a name not read in time is not a reply waited for
				}
			}
		}
	}
}
