package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
)

// serveProcess starts collab serve as a process of its own (the test
// binary as collab), its output to stdout, and stops it when the test
// ends.
func serveProcess(t *testing.T, stdout *os.File, attr *syscall.SysProcAttr) (*exec.Cmd, chan error, *syncBuffer) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(os.Args[0], "serve", "--listen", "127.0.0.1:0", "--person", "alice", "--root", newTree(t),
		"--tokens", home+"/tokens.json")
	cmd.Env = append(os.Environ(), "COLLAB_TEST_AS=collab", "HOME="+home, "XDG_CONFIG_HOME="+home)
	errb := &syncBuffer{}
	cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = stdout, errb, attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		err := <-done
		done <- err
		if t.Failed() {
			t.Logf("collab serve's log:\n%s", errb.String())
		}
	})
	return cmd, done, errb
}

// signInURLs returns the sign-in URLs in what r reads, one a call.
func signInURLs(t *testing.T, r io.Reader) func() string {
	lines := bufio.NewScanner(r)
	return func() string {
		t.Helper()
		for lines.Scan() {
			if l := strings.TrimSpace(lines.Text()); strings.Contains(l, "/signin?token=") {
				return l
			}
		}
		t.Fatalf("no more sign-in URLs: %v", lines.Err())
		return ""
	}
}

// signInStatus opens a sign-in URL and returns the status, a 303 only
// with a session cookie.
func signInStatus(t *testing.T, url string) int {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther && len(resp.Cookies()) != 1 {
		return 0
	}
	return resp.StatusCode
}

// TestServeSignInOnHangup: SIGHUP makes collab serve print a fresh
// one-time sign-in URL, whether the last one was used or not; it signs in
// once, the last one stops working, and the server goes on serving. On
// the old code SIGHUP ended the server.
func TestServeSignInOnHangup(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, _ := serveProcess(t, w, nil)
	w.Close()
	defer r.Close()
	next := signInURLs(t, r)
	first := next()
	if code := signInStatus(t, first); code != http.StatusSeeOther {
		t.Fatalf("the printed URL: %d", code)
	}
	hangup := func() string {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		return next()
	}
	second := hangup()
	base := first[:strings.Index(first, "/signin")]
	if !strings.HasPrefix(second, base+"/signin?token=") || second == first {
		t.Fatalf("after SIGHUP %q (first %q)", second, first)
	}
	third := hangup() // the second never used
	for _, c := range []struct {
		url  string
		want int
	}{
		{first, http.StatusUnauthorized},
		{second, http.StatusUnauthorized},
		{third, http.StatusSeeOther},
		{third, http.StatusUnauthorized},
	} {
		if code := signInStatus(t, c.url); code != c.want {
			t.Errorf("%s: %d, want %d", c.url, code, c.want)
		}
	}
}

// TestServeStopsWhenItsTerminalHangsUp: collab serve in a terminal of its
// own (a pty, its controlling terminal) stops when the terminal goes, as
// it did before SIGHUP printed a URL: the kernel sends SIGHUP and the URL
// cannot be printed.
func TestServeStopsWhenItsTerminalHangsUp(t *testing.T) {
	ptm, pts := openPty(t)
	_, done, errb := serveProcess(t, pts, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1})
	pts.Close()
	next := signInURLs(t, ptm)
	if url := next(); signInStatus(t, url) != http.StatusSeeOther {
		t.Fatalf("the printed URL %q", url)
	}
	ptm.Close() // the terminal window closes
	select {
	case err := <-done:
		done <- err
		if err != nil || !strings.Contains(errb.String(), "print the new sign-in URL") {
			t.Errorf("collab serve ended with %v, not having failed to print the URL:\n%s", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("collab serve goes on after its terminal hung up:\n%s", errb.String())
	}
}

// openPty returns a new pseudo-terminal's two ends.
func openPty(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptm.Close(); pts.Close() })
	return ptm, pts
}

// TestSignInOnHangupStopsWhenItCannotPrint: a URL that cannot be printed
// (the terminal is gone) ends the loop with the error, and the server
// stops; an ended context ends it quietly.
func TestSignInOnHangupStopsWhenItCannotPrint(t *testing.T) {
	srv, err := web.New(web.Config{Root: tree.Root(t.TempDir()), Person: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	print := func(si web.SignIn) error { return printSignIn(si, "/t", "alice", failWriter{}) }
	hup := make(chan os.Signal, 1)
	hup <- syscall.SIGHUP
	if err := srv.SignInOnSignal(context.Background(), hup, "http://127.0.0.1:1", print); !errors.Is(err, syscall.EIO) {
		t.Errorf("printing to a terminal that hung up: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.SignInOnSignal(ctx, hup, "http://127.0.0.1:1", print); err != nil {
		t.Errorf("ended: %v", err)
	}
}

// failWriter fails as a write to a terminal that hung up does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.EIO }
