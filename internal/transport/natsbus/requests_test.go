package natsbus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/transport/natsbus"
)

// TestServeQueue: requests are answered by the handler, nobody listening
// is ErrNoResponders, and the end of ctx stops the server after the
// requests under way.
func TestServeQueue(t *testing.T) {
	s := startServer(t, false, nil)
	srv, _ := connect(t, natsbus.Options{URL: s.URL()})
	cli, _ := connect(t, natsbus.Options{URL: s.URL()})
	ctx := ctxT(t)
	if _, err := natsbus.Request(ctx, cli.Conn(), "svc.echo", []byte("x")); !errors.Is(err, natsbus.ErrNoResponders) {
		t.Fatalf("Request with nobody listening: %v, want ErrNoResponders", err)
	}
	sctx, stop := context.WithCancel(context.Background())
	var served atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- natsbus.ServeQueue(sctx, srv.Conn(), natsbus.Queue{Subject: "svc.>", Group: "q", Workers: 2},
			func(subject string, data []byte) []byte {
				served.Add(1)
				return append([]byte(subject+":"), data...)
			}, nil)
	}()
	eventually(t, "the server listens", func() bool {
		rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		got, err := natsbus.Request(rctx, cli.Conn(), "svc.echo", []byte("hi"))
		return err == nil && string(got) == "svc.echo:hi"
	})
	stop()
	if err := <-done; err != nil {
		t.Errorf("ServeQueue: %v", err)
	}
	if served.Load() == 0 {
		t.Error("no request served")
	}
}
