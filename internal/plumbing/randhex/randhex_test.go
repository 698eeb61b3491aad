package randhex

import (
	"encoding/hex"
	"testing"
)

func TestString(t *testing.T) {
	for _, n := range []int{0, 2, 8} {
		s := String(n)
		if len(s) != 2*n {
			t.Errorf("String(%d) = %q, want %d digits", n, s, 2*n)
		}
		if _, err := hex.DecodeString(s); err != nil {
			t.Errorf("String(%d) = %q: %v", n, s, err)
		}
	}
	seen := map[string]bool{}
	for range 100 {
		s := String(8)
		if seen[s] {
			t.Fatalf("String(8) repeated %q within 100 draws", s)
		}
		seen[s] = true
	}
}
