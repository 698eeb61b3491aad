package web

import (
	"context"
	"errors"
	"net"
	"os"
	"time"
)

// SignIn is a one-time sign-in URL as the server announces it.
type SignIn struct {
	URL   string    // the whole URL: the server's base, then the path
	Until time.Time // when it stops working
	Fresh bool      // a new one, after a signal: the one before no longer works
}

// Serving is how ListenAndServe listens and announces its sign-in URLs.
type Serving struct {
	Listen            string // HOST:PORT
	CertFile, KeyFile string // both set: TLS
	// Hangup brings the signals (SIGHUP) that ask for a fresh sign-in
	// URL; nil: none.
	Hangup <-chan os.Signal
	// Announce prints a sign-in URL: the first one, and one per signal.
	// When it fails for a fresh one (the terminal hung up), the server
	// stops, after Stopping is told why.
	Announce func(SignIn) error
	Stopping func(error)
}

// ListenAndServe listens on sv.Listen and serves until ctx ends, after
// announcing the sign-in URL; each signal on sv.Hangup announces a new
// one, and the last one stops working. A person at the server's host
// signs in again this way without a restart, which would sign everyone
// out.
func (s *Server) ListenAndServe(ctx context.Context, sv Serving) error {
	ln, err := net.Listen("tcp", sv.Listen)
	if err != nil {
		return err
	}
	scheme := "http"
	if sv.CertFile != "" {
		scheme = "https"
	}
	base := scheme + "://" + ln.Addr().String()
	_ = sv.Announce(SignIn{URL: base + s.SignInPath(), Until: s.SignInExpires()})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hupDone := make(chan struct{})
	go func() {
		defer close(hupDone)
		if err := s.SignInOnSignal(ctx, sv.Hangup, base, sv.Announce); err != nil {
			if sv.Stopping != nil {
				sv.Stopping(err)
			}
			cancel()
		}
	}()
	err = s.Serve(ctx, ln, sv.CertFile, sv.KeyFile, 5*time.Second)
	cancel()
	<-hupDone
	return err
}

// SignInOnSignal announces a fresh one-time sign-in URL (base, then its
// path) for each signal on hup, until ctx ends; the URL before it stops
// working. It returns the error of a URL it could not make or announce:
// announcing fails when the terminal hung up (the signal was the hangup,
// which ended the server before SIGHUP meant this), and then the server
// stops.
func (s *Server) SignInOnSignal(ctx context.Context, hup <-chan os.Signal, base string, announce func(SignIn) error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			path, until, err := s.NewSignIn()
			if err != nil {
				return err
			}
			if err := announce(SignIn{URL: base + path, Until: until, Fresh: true}); err != nil {
				return err
			}
		}
	}
}

// ErrPlainRemote refuses plain HTTP on an address other than loopback:
// such a listener needs TLS, or the admin's knowing choice of plain HTTP.
var ErrPlainRemote = errors.New("web: not loopback: plain HTTP would carry tokens and cookies in clear")

// CheckListen checks a listen address (HOST:PORT) and, unless anyAddr
// (TLS, or plain HTTP chosen knowingly), that it is loopback:
// ErrPlainRemote otherwise.
func CheckListen(listen string, anyAddr bool) error {
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return err
	}
	if !anyAddr && !IsLoopback(listen) {
		return ErrPlainRemote
	}
	return nil
}
