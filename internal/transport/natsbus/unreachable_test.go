package natsbus

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestUnreachable: a connection that broke during the handshake, however
// it broke, is no server answering (a remote send queues and exits 5);
// a server that answered and refused is not.
func TestUnreachable(t *testing.T) {
	sys := func(op, call string, errno syscall.Errno) error {
		return &net.OpError{Op: op, Net: "tcp", Err: &os.SyscallError{Syscall: call, Err: errno}}
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no servers", nats.ErrNoServers, true},
		{"timeout", nats.ErrTimeout, true},
		{"refused", sys("dial", "connect", syscall.ECONNREFUSED), true},
		{"reset", sys("read", "read", syscall.ECONNRESET), true},
		// CI: a partition that closed the connection as CONNECT was written.
		{"broken pipe", fmt.Errorf("nats: %w", sys("write", "write", syscall.EPIPE)), true},
		{"aborted", sys("read", "read", syscall.ECONNABORTED), true},
		{"eof", io.EOF, true},
		{"deadline", os.ErrDeadlineExceeded, true},
		{"authorization", nats.ErrAuthorization, false},
		// nats.go: the server closed the connection after the TLS handshake
		// (a client certificate refused), seen as EOF, a reset or a broken pipe.
		{"tls closed, broken pipe", fmt.Errorf("%w: connection closed by remote after TLS handshake: %w", nats.ErrTLS, sys("write", "write", syscall.EPIPE)), false},
		{"tls closed, eof", fmt.Errorf("%w: connection closed by remote after TLS handshake: %w", nats.ErrTLS, io.EOF), false},
		{"tls alert", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}, false},
		{"unknown CA", x509.UnknownAuthorityError{}, false},
		{"other", errors.New("nats: invalid connection"), false},
	}
	for _, tt := range tests {
		if got := unreachable(tt.err); got != tt.want {
			t.Errorf("%s: unreachable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
