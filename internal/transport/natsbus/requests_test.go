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

// TestServeQueueWaitsForBuffered: no request is handled after ServeQueue
// returns, though a drain hands buffered ones to the callback after Drain
// itself has returned (those are dropped: their clients retry).
func TestServeQueueWaitsForBuffered(t *testing.T) {
	s := startServer(t, false, nil)
	srv, _ := connect(t, natsbus.Options{URL: s.URL()})
	cli, _ := connect(t, natsbus.Options{URL: s.URL()})
	sctx, stop := context.WithCancel(context.Background())
	release, first := make(chan struct{}), make(chan struct{})
	var handled, late atomic.Int32
	var returned atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- natsbus.ServeQueue(sctx, srv.Conn(), natsbus.Queue{Subject: "buf.>", Group: "q", Workers: 1},
			func(subject string, data []byte) []byte {
				if handled.Add(1) == 1 {
					close(first)
					<-release
				}
				if returned.Load() {
					late.Add(1)
				}
				return nil
			}, nil)
		returned.Store(true)
	}()
	eventually(t, "the server listens", func() bool {
		rctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
		defer cancel()
		_, err := natsbus.Request(rctx, cli.Conn(), "buf.x", nil)
		return err == nil || errors.Is(err, context.DeadlineExceeded)
	})
	<-first // the one worker is held; what follows is buffered
	const more = 20
	for range more {
		if err := cli.Conn().Publish("buf.y", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := cli.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	stop()
	close(release)
	if err := <-done; err != nil {
		t.Errorf("ServeQueue: %v", err)
	}
	if n := late.Load(); n != 0 {
		t.Errorf("%d requests were handled after ServeQueue returned", n)
	}
}
