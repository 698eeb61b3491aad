package channel_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/tmpfs"
)

// t0 is the fixed "now" of most tests.
var t0 = time.Date(2026, 1, 11, 12, 0, 0, 0, time.UTC)

func fixed(t time.Time) func() time.Time { return func() time.Time { return t } }

// newRoot returns a fresh tree with an existing, empty channel folder ch.
func newRoot(t testing.TB, ch string) tree.Root {
	t.Helper()
	root := tree.Root(t.TempDir())
	if err := os.MkdirAll(root.Channel(ch), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// tmpfsRoot returns a fresh tree on a tmpfs mounted at a new t.TempDir()
// folder, unmounted at the end of the test; without the right to mount
// (not root) it is a plain t.TempDir() tree. Tests that post thousands of
// messages use it: on a disk, each post's two fsyncs and the directory
// lock a scanning reader holds make them several times slower, and those
// costs are not what they test (link and O_EXCL behave alike on both).
func tmpfsRoot(t testing.TB) tree.Root {
	t.Helper()
	path, err := tmpfs.Mount(t, "512m")
	if err != nil {
		t.Logf("no tmpfs (%v); using the temp folder's own filesystem", err)
		return tree.Root(t.TempDir())
	}
	return tree.Root(path)
}

// messageJSON is a valid message file's content, as a foreign writer might
// write it (only the required fields and a few more).
func messageJSON(from, text string) []byte {
	b, err := json.Marshal(map[string]any{
		"from":    from,
		"to":      "all",
		"content": map[string]any{"text": text},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// fileName is a message file name at t.
func fileName(agent string, t time.Time, hex4 string) string {
	return channel.NewID(agent, t, hex4) + ".json"
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// post posts a message from agent with text into ch and returns it.
func post(t testing.TB, w *channel.Writer, ch, from, text string) channel.Message {
	t.Helper()
	m := channel.Message{SessionID: ch, From: from, Content: channel.Content{Text: text}}
	if err := w.Post(&m); err != nil {
		t.Fatalf("Post: %v", err)
	}
	return m
}

// scan runs r.Scan and fails the test if it errs or does not return within
// 10 s (a FIFO, say, must not hang it).
func scan(t testing.TB, r *channel.Reader) ([]channel.Message, []channel.Skip) {
	t.Helper()
	type result struct {
		msgs  []channel.Message
		skips []channel.Skip
		err   error
	}
	done := make(chan result, 1)
	go func() {
		msgs, skips, err := r.Scan()
		done <- result{msgs, skips, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("Scan: %v", res.err)
		}
		return res.msgs, res.skips
	case <-time.After(10 * time.Second):
		t.Fatal("Scan did not return within 10s")
		return nil, nil
	}
}

// texts returns the texts of msgs, in order.
func texts(msgs []channel.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Content.Text)
	}
	return out
}

// withoutDAC returns a function that runs f on a dedicated OS thread which
// has dropped CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its effective
// capabilities. On that thread file modes apply even to root, so a file
// with mode 000 is unreadable there while the rest of the test (and the
// process) keeps root's powers. Capabilities are per thread on Linux; the
// thread is never unlocked, so it exits with its goroutine at the end of
// the test and is never reused. The test is skipped if the capabilities
// cannot be dropped.
func withoutDAC(t *testing.T) func(f func()) {
	t.Helper()
	calls := make(chan func())
	done := make(chan struct{})
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		err := unix.Capget(&hdr, &data[0])
		if err == nil {
			data[0].Effective &^= 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH
			err = unix.Capset(&hdr, &data[0])
		}
		ready <- err
		for f := range calls {
			f()
			done <- struct{}{}
		}
	}()
	t.Cleanup(func() { close(calls) })
	if err := <-ready; err != nil {
		t.Skipf("cannot drop CAP_DAC_OVERRIDE on a thread: %v", err)
	}
	return func(f func()) {
		calls <- f
		<-done
	}
}

// makeUnreadable makes path unreadable to the threads run by run (see
// withoutDAC), and skips the test if that does not work.
func makeUnreadable(t *testing.T, run func(func()), path string) {
	t.Helper()
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	var err error
	run(func() {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			f.Close()
		}
	})
	if err == nil {
		t.Skipf("%s is still readable after chmod 000 without CAP_DAC_OVERRIDE", filepath.Base(path))
	}
}
