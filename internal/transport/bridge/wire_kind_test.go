package bridge

import (
	"testing"

	"github.com/collabdev/collab/internal/errkind"
)

// TestWireKinds: a kind sent on the wire reads back as itself, except
// those a remote client cannot act on, which read as Failed or, for a
// Timeout, as Unavailable (worth a retry).
func TestWireKinds(t *testing.T) {
	for k := errkind.Failed; k <= errkind.Queued; k++ {
		back := (&Error{Code: wireCode(k)}).Kind()
		want := k
		switch k {
		case errkind.Timeout:
			want = errkind.Unavailable
		case errkind.Queued:
			want = errkind.Failed
		}
		if back != want {
			t.Errorf("%v: on the wire %q, read back as %v, want %v", k, wireCode(k), back, want)
		}
	}
}
