package proc

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

func TestPIDAlive(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pid  int
		want bool
	}{
		{"self", os.Getpid(), true},
		{"init (another user's: EPERM)", 1, true},
		{"exited and reaped", cmd.Process.Pid, false},
		{"zero (own process group)", 0, false},
		{"negative (a process group)", -1, false},
		{"own process group", -os.Getpid(), false},
		{"beyond pid_t", 1 << 40, false},
		{"own pid plus 2^32 (truncated to pid_t, it would be self)", 1<<32 + os.Getpid(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PIDAlive(tt.pid); got != tt.want {
				t.Errorf("PIDAlive(%d) = %v, want %v", tt.pid, got, tt.want)
			}
		})
	}
}

// zombie starts a child that exits at once and is not reaped: a zombie
// until the test ends (then reaped).
func zombie(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Wait() })
	pid := cmd.Process.Pid
	if err := awaitExit(pid); err != nil { // exited, left waitable
		t.Fatal(err)
	}
	return pid
}

// A zombie exists (signal 0 reaches it) but is dead: the one rule.
func TestPIDAliveZombie(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("zombies are seen through /proc")
	}
	pid := zombie(t)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the zombie %d is not there: %v", pid, err)
	}
	if st, err := readStat(pid); err != nil || st.state != 'Z' {
		t.Fatalf("stat of %d = %+v, %v; want a zombie", pid, st, err)
	}
	if PIDAlive(pid) {
		t.Errorf("PIDAlive(zombie %d) = true, want false", pid)
	}
	if GroupHasEnv(pid, "PATH="+os.Getenv("PATH")) {
		t.Errorf("GroupHasEnv(zombie %d) = true, want false", pid)
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name, line string
		want       stat
		ok         bool
	}{
		{"running", "42 (collab) R 1 42 42 0 -1", stat{'R', 42}, true},
		{"zombie", "42 (true) Z 1 40 40 0 -1", stat{'Z', 40}, true},
		{"comm with ) and spaces", "42 (a) Z 1 (b) S 7 9 9 0", stat{'S', 9}, true},
		{"no comm", "42 collab R 1 42", stat{}, false},
		{"short", "42 (x) R 1", stat{}, false},
		{"bad pgrp", "42 (x) R 1 x", stat{}, false},
		{"long state", "42 (x) RR 1 42", stat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.line))
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("parseStat(%q) = %+v, %v; want %+v, ok %v", tt.line, got, err, tt.want, tt.ok)
			}
		})
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (collab) R 1 42 42 0 -1"))
	f.Add([]byte("1 ()) Z 0 1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseStat(data)
		if err != nil && st != (stat{}) {
			t.Errorf("parseStat(%q) = %+v with error %v", data, st, err)
		}
	})
}
