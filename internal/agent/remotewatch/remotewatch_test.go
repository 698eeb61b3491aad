package remotewatch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAwaitCaughtUp: the watcher of watch --remote starts once the mirror
// has first caught up, or after the bound; a mirror that stops first is
// an error.
func TestAwaitCaughtUp(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	open := make(chan struct{})
	stopped := func(err error) *Mirror {
		return &Mirror{Ended: closed, Caught: open, Err: err}
	}
	if err := (&Mirror{Ended: open, Caught: closed}).AwaitCaughtUp(context.Background(), time.Hour); err != nil {
		t.Errorf("caught up: %v", err)
	}
	if err := (&Mirror{Ended: open, Caught: open}).AwaitCaughtUp(context.Background(), time.Millisecond); err != nil {
		t.Errorf("past the bound: %v", err)
	}
	if err := stopped(errors.New("no stream")).AwaitCaughtUp(context.Background(), time.Hour); err == nil || !strings.Contains(err.Error(), "no stream") {
		t.Errorf("mirror failed first: %v", err)
	}
	if err := stopped(nil).AwaitCaughtUp(context.Background(), time.Hour); err == nil {
		t.Error("mirror stopped first: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&Mirror{Ended: open, Caught: open}).AwaitCaughtUp(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
