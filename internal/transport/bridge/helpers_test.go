package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// env is a tree with a keyring trusting alice's and bob's keys.
type env struct {
	root  tree.Root
	ring  *keyring.Ring
	v     *signing.Verifier
	keys  map[string]*signing.Signer
	stray *signing.Signer // alice's key that the keyring does not know
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{root: tree.Root(t.TempDir()), keys: map[string]*signing.Signer{}}
	e.ring = keyring.Open(filepath.Join(t.TempDir(), "keys"))
	for _, a := range []string{"alice", "bob"} {
		k, err := signing.NewKey(filepath.Join(t.TempDir(), a+".key"), a, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ring.Trust(a, k.PublicKey()); err != nil {
			t.Fatal(err)
		}
		e.keys[a] = k
	}
	k, err := signing.NewKey(filepath.Join(t.TempDir(), "stray.key"), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	e.stray = k
	e.v = signing.NewVerifier(e.ring)
	return e
}

func (e *env) server(cfg Config) *Server {
	cfg.Root, cfg.Verifier = e.root, e.v
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return New(cfg)
}

var seq atomic.Int64

// msg returns a message of from in ch, signed with key (nil: unsigned).
func msg(from, ch, text string, key *signing.Signer) channel.Message {
	now := time.Now().UTC()
	m := channel.Message{
		ID:        channel.NewID(from, now, fmt.Sprintf("%04x", seq.Add(1)&0xffff)),
		Timestamp: now.Format(channel.TimeFormat),
		SessionID: ch, From: from, To: "all", Type: "chat",
		Content:  channel.Content{Text: text},
		Metadata: channel.Metadata{Mode: channel.ModeChat, Turn: from},
	}
	if key != nil {
		m.Signature = key.Sign(m.Payload())
	}
	return m
}

func postBody(t testing.TB, m channel.Message) []byte {
	t.Helper()
	raw, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(PostRequest{Channel: m.SessionID, Message: raw})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keyFor makes a key for agent and trusts it.
func (e *env) keyFor(t *testing.T, agent string) *signing.Signer {
	t.Helper()
	k, err := signing.NewKey(filepath.Join(t.TempDir(), agent+".key"), agent, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ring.Trust(agent, k.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return k
}

// serve runs s on a new connection to url until the test ends.
func serve(t testing.TB, s *Server, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, s, nc)
	return nc
}

// serveOn runs s on nc until the test ends, then closes nc.
func serveOn(t testing.TB, s *Server, nc *nats.Conn) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, nc) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		nc.Close()
	})
	// Wait until the subscription is made and known to the server.
	for nc.NumSubscriptions() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// request sends a raw request and decodes the reply into v (if not nil),
// returning the common part.
func request(t *testing.T, nc *nats.Conn, op, agent string, body []byte, v any) Reply {
	t.Helper()
	var msg *nats.Msg
	var err error
	for range 50 { // the bridge's subscription may still be on its way
		msg, err = nc.Request(RequestSubject(op, agent), body, 5*time.Second)
		if err != nats.ErrNoResponders {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("request %s: %v", op, err)
	}
	var r Reply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		t.Fatalf("reply %s: %v", msg.Data, err)
	}
	if v != nil {
		if err := json.Unmarshal(msg.Data, v); err != nil {
			t.Fatalf("reply %s: %v", msg.Data, err)
		}
	}
	return r
}

func handle(t *testing.T, s *Server, op, agent string, body []byte, v any) Reply {
	t.Helper()
	out := s.Handle(RequestSubject(op, agent), body)
	var r Reply
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("reply %s: %v", out, err)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			t.Fatalf("reply %s: %v", out, err)
		}
	}
	return r
}
