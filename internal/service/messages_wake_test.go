package service_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// TestWaitWokenByTheReplyFile: a wait on the mount (wait, send --wait:
// WaitReply and a Waiter from ExpectReply) finds a reply posted by another
// goroutine by the wake its file makes (fsnotify on this host), not by a
// poll: the poll is an hour, and the reply is posted only once the wait
// has made its first scan. Also for a channel whose folder is not there
// when the wait is prepared.
func TestWaitWokenByTheReplyFile(t *testing.T) {
	tests := []struct {
		name   string
		expect bool   // ExpectReply before the post, else WaitReply after
		ch     string // "dev" exists before the wait is prepared
	}{
		{"WaitReply", false, "dev"},
		{"ExpectReply", true, "dev"},
		{"ExpectReply, new channel", true, "fresh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc, _ := newMount(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			poster(t, ctx, svc, "dev")("alice", "hello", "") // the channel "dev" exists
			wait := func(id string, opt delegate.Options) (channel.Message, error) {
				return svc.WaitReply(ctx, tt.ch, id, opt)
			}
			if tt.expect {
				w, err := svc.ExpectReply(ctx, tt.ch)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				wait = func(id string, opt delegate.Options) (channel.Message, error) { return w.Wait(ctx, id, opt) }
			}
			post := poster(t, ctx, svc, tt.ch)
			req, done := startWait(t, ctx, post, time.Hour, wait)
			post("bob", "pong", req.ID)
			awaitPong(t, ctx, done, "the reply was not found without a poll: no wake")
		})
	}
}

// TestWaitAcrossHosts: where fsnotify sees nothing (the reply written on
// another host: here through another bindfs view of the folder), the poll
// finds the reply, and a NATS announcement (Config.Wake) of its file wakes
// the wait at once; the announcements stop with the wait.
func TestWaitAcrossHosts(t *testing.T) {
	for _, nats := range []bool{false, true} {
		name := map[bool]string{false: "polling", true: "NATS"}[nats]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			backing := tree.Root(t.TempDir())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			there := service.NewMount(service.Config{Root: backing, Host: "vm-2"})
			post := poster(t, ctx, there, "dev")
			post("alice", "hello", "")
			announced := make(chan string)
			stopped := make(chan struct{})
			cfg := service.Config{Root: tree.Root(bindfstest.Mount(t, string(backing))), Host: "vm-1"}
			poll := 20 * time.Millisecond
			if nats {
				poll = time.Hour
				cfg.Wake = func(_ context.Context, ch string) (<-chan string, func(), error) {
					if ch != "dev" {
						t.Errorf("Wake(%q), want dev", ch)
					}
					return announced, func() { close(stopped) }, nil
				}
			}
			here := service.NewMount(cfg)
			req, done := startWait(t, ctx, post, poll, func(id string, opt delegate.Options) (channel.Message, error) {
				return here.WaitReply(ctx, "dev", id, opt)
			})
			pong := post("bob", "pong", req.ID)
			if nats {
				select {
				case announced <- pong.ID + ".json":
				case <-ctx.Done():
					t.Fatal("the wait does not read the announcements")
				}
			}
			awaitPong(t, ctx, done, "the reply was not found")
			if nats {
				select {
				case <-stopped:
				case <-ctx.Done():
					t.Error("the announcements were not stopped")
				}
			}
		})
	}
}

// poster returns a function that posts on ch of svc as from (to bob, in
// reply to inReplyTo if set).
func poster(t *testing.T, ctx context.Context, svc *service.Mount, ch string) func(from, text, inReplyTo string) channel.Message {
	return func(from, text, inReplyTo string) channel.Message {
		t.Helper()
		p, err := svc.Post(ctx, service.Actor{Name: from, Hops: -1},
			service.PostRequest{Channel: ch, To: "bob", Text: text, InReplyTo: inReplyTo})
		if err != nil {
			t.Fatal(err)
		}
		return p.Message
	}
}

type waited struct {
	m   channel.Message
	err error
}

// startWait posts alice's request and bob's decoy reply to it, runs wait
// for the reply (polling each poll; the decoy left out by Skip) in a
// goroutine, and returns once the wait has scanned the channel (it saw the
// decoy): a reply posted from then on is found by a wake or a poll.
func startWait(t *testing.T, ctx context.Context, post func(from, text, inReplyTo string) channel.Message, poll time.Duration,
	wait func(id string, opt delegate.Options) (channel.Message, error)) (channel.Message, <-chan waited) {
	t.Helper()
	req := post("alice", "ping", "")
	post("bob", "decoy", req.ID)
	scanned := make(chan struct{})
	var once sync.Once
	opt := delegate.Options{Poll: poll, Trust: signing.Any, NotFrom: "alice",
		Skip: func(m *channel.Message) bool {
			if m.Content.Text != "decoy" {
				return false
			}
			once.Do(func() { close(scanned) })
			return true
		}}
	done := make(chan waited, 1)
	go func() {
		m, err := wait(req.ID, opt)
		done <- waited{m, err}
	}()
	select {
	case <-scanned:
	case r := <-done:
		t.Fatalf("the wait ended before the reply: %q, %v", r.m.Content.Text, r.err)
	case <-ctx.Done():
		t.Fatal("the wait did not scan the channel")
	}
	return req, done
}

// awaitPong fails t unless the wait returns bob's pong before ctx ends.
func awaitPong(t *testing.T, ctx context.Context, done <-chan waited, why string) {
	t.Helper()
	select {
	case r := <-done:
		if r.err != nil || r.m.Content.Text != "pong" {
			t.Errorf("the wait returned %q, %v; want bob's pong", r.m.Content.Text, r.err)
		}
	case <-ctx.Done():
		t.Fatal(why)
	}
}
