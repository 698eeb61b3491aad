package natsbus_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/testsupport/syncbuf"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// testServer is an embedded nats-server (internal/testsupport/natstest).
type testServer = natstest.Server

func startServer(t *testing.T, jetStream bool, mutate func(*server.Options)) *testServer {
	t.Helper()
	return natstest.Start(t, jetStream, mutate)
}

// logBuffer collects a logger's output; safe for concurrent use.
type logBuffer = syncbuf.Buffer

func newLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// connect connects a Bus with short timeouts to s and closes it at the end
// of the test.
func connect(t *testing.T, o natsbus.Options) (*natsbus.Bus, *logBuffer) {
	t.Helper()
	log, lb := newLogger()
	o.Logger = log
	if o.Name == "" {
		o.Name = natsbus.ConnName("test", "host")
	}
	if o.ReconnectWait == 0 {
		o.ReconnectWait = 20 * time.Millisecond
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := natsbus.Connect(ctx, o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(b.Close)
	return b, lb
}

// post writes a message file, as collab send does, and returns the message.
func post(t *testing.T, root tree.Root, ch, from, text string) *channel.Message {
	t.Helper()
	m := &channel.Message{SessionID: ch, From: from, Content: channel.Content{Text: text}}
	w := channel.Writer{Root: root}
	if err := w.Post(m); err != nil {
		t.Fatalf("Post: %v", err)
	}
	return m
}

// eventually waits up to 10 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
