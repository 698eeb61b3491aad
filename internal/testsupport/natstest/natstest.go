// Package natstest runs a real nats-server inside a test process, on a
// free port of 127.0.0.1, with or without JetStream, and can stop and
// restart it on the same port and store (the broker faults tests need).
// [StartCluster] runs three of them as a JetStream cluster, whose nodes
// stop and restart the same way, and finds the node that leads a stream.
package natstest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded nats-server, shut down when the test ends.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
}

// Start starts a server; mutate, if set, adjusts its options first (auth,
// TLS, a fixed port).
func Start(t testing.TB, jetStream bool, mutate func(*server.Options)) *Server {
	t.Helper()
	s := &Server{t: t, opts: server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true}}
	if jetStream {
		s.opts.JetStream = true
		s.opts.StoreDir = t.TempDir()
	}
	if mutate != nil {
		mutate(&s.opts)
	}
	return startServer(t, s.opts)
}

// startServer starts a server with o and pins its client port, so a
// restart keeps it.
func startServer(t testing.TB, o server.Options) *Server {
	t.Helper()
	s := &Server{t: t, opts: o}
	s.Start()
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(s.Stop)
	return s
}

// Start starts the server again after Stop, on the same port and store.
func (s *Server) Start() {
	s.t.Helper()
	o := s.opts // NewServer keeps and adjusts what it is given
	srv, err := server.NewServer(&o)
	if err != nil {
		s.t.Fatalf("nats-server: %v", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		s.t.Fatal("nats-server did not start")
	}
	s.srv = srv
}

// Stop shuts the server down; it does nothing if it is not running.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart stops and starts the server.
func (s *Server) Restart() {
	s.Stop()
	s.Start()
}

// URL is the server's client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port) }

// Raw is the running server, for its monitoring calls (nil when stopped).
func (s *Server) Raw() *server.Server { return s.srv }
