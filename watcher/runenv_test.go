package watcher

import "testing"

func TestRunHops(t *testing.T) {
	tests := []struct {
		name, v string
		want    int
	}{
		{"outside a run", "", -1},
		{"top", "0", 0},
		{"deep", "5", 5},
		{"negative", "-2", -1},
		{"not a number", "two", -1},
		{"spaces", " 2", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RunHops(func(k string) string {
				if k == EnvHops {
					return tt.v
				}
				return ""
			})
			if got != tt.want {
				t.Errorf("RunHops(%s=%q) = %d, want %d", EnvHops, tt.v, got, tt.want)
			}
		})
	}
}
