package proc

import (
	"os"
	"os/exec"
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
