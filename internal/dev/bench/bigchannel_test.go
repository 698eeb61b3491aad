package main

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestMain lets the test binary be the rusage helper, as collab-bench's
// main does.
func TestMain(m *testing.M) {
	if out := os.Getenv(rusageEnv); out != "" {
		os.Exit(rusageHelper(out, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestPeakRSSIsTheChilds checks that peakRSS reports a small child as
// small while this process is big: wait4 here would charge the child with
// this process's peak (vfork), which is why the helper is there.
func TestPeakRSSIsTheChilds(t *testing.T) {
	big := make([]byte, 300<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	b := &bench{dir: t.TempDir()}
	kb, err := b.peakRSS(context.Background(), "/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if kb <= 0 || kb > 100<<10 {
		t.Errorf("peakRSS(/bin/true) = %d kB, want above 0 and well below this process's 300 MB", kb)
	}
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err == nil {
		t.Logf("peak RSS of /bin/true: %d kB through the helper, %d kB from this process's wait4",
			kb, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	}
	big[0]++ // keep it live until here
}
