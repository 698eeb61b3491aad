package presence

import "testing"

func TestIsAwake(t *testing.T) {
	for _, tt := range []struct {
		state string
		want  bool
	}{
		{AwakeIdle, true}, {AwakeWorking, true}, {AwakeWaiting, true}, {AwakeThrottled, true},
		{Stale, false}, {Offline, false}, {"UNKNOWN", false}, {"AWAKE", false}, {"", false},
	} {
		if got := IsAwake(tt.state); got != tt.want {
			t.Errorf("IsAwake(%q) = %v, want %v", tt.state, got, tt.want)
		}
	}
}
