package bridge

import (
	"context"
	"errors"
	"testing"
)

// TestTogetherStopsAll: when one part of a bridge stops, the others are
// told to stop, and what every part returned comes back.
func TestTogetherStopsAll(t *testing.T) {
	boom := errors.New("boom")
	err := together(context.Background(),
		func(context.Context) error { return boom },
		func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	if !errors.Is(err, boom) || !errors.Is(err, context.Canceled) {
		t.Errorf("together = %v, want both parts' errors", err)
	}
}
