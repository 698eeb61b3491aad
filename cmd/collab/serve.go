package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"collab/internal/identity/keyring"
	"collab/internal/identity/signing"
	"collab/internal/plumbing/tree"
	"collab/internal/web"
)

func runServe(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab serve [--listen 127.0.0.1:8765] [--person NAME] [--tls-cert F --tls-key F | --insecure-http]

Serve the tree to people: a dashboard page and a JSON API under /api/.
At start it prints a sign-in URL carrying a one-time token; opening it
sets a session cookie (kept in memory: a restart signs everyone out).
Every request needs that session, loopback included. What the page posts
is sent as --person, signed with that person's key when there is one.

Loopback only by default. A listener on any other address needs TLS
(--tls-cert and --tls-key) or, knowingly, --insecure-http.

Flags:
`)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", web.DefaultListen, "address to listen on (HOST:PORT)")
	person := fs.String("person", "", "who the signed-in people post as (default your login name)")
	certFile := fs.String("tls-cert", "", "TLS certificate file (PEM)")
	keyFile := fs.String("tls-key", "", "TLS private key file (PEM)")
	insecure := fs.Bool("insecure-http", false, "allow plain HTTP on a non-loopback address")
	maxStreams := fs.Int("max-streams", web.DefaultMaxStreams, "open live event streams at most")
	poll := fs.Duration("poll", web.DefaultPoll, "how often live streams look for new messages")
	keyf := keyFlag(fs)
	ringf := keyringFlag(fs)
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("serve: unexpected argument %q", fs.Arg(0))
	}
	root := tree.Resolve(*rootf, getenv)
	who, err := actingAgent(ctx, "serve", "person", *person)
	if err != nil {
		return err
	}
	if (*certFile == "") != (*keyFile == "") {
		return usageErrorf("serve: --tls-cert and --tls-key go together")
	}
	useTLS := *certFile != ""
	if _, _, err := net.SplitHostPort(*listen); err != nil {
		return usageErrorf("serve: --listen %q: %v", *listen, err)
	}
	if !web.IsLoopback(*listen) && !useTLS && !*insecure {
		return usageErrorf("serve: --listen %s is not loopback: use --tls-cert/--tls-key, or --insecure-http to serve plain HTTP anyway", *listen)
	}
	if *maxStreams <= 0 || *poll <= 0 {
		return usageErrorf("serve: --max-streams and --poll must be positive")
	}
	signer, err := loadSigner(*keyf, who, getenv)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ring := openKeyring(root, *ringf)
	if err := ring.Check(keyring.Owner(string(root)), true); err != nil {
		fmt.Fprintf(stderr, "collab: warning: %v\n", err)
	}
	srv, err := web.New(web.Config{
		Root: root, Person: who, Signer: signer, Verifier: signing.NewVerifier(ring),
		TLS: useTLS, MaxStreams: *maxStreams, Poll: *poll,
		Logger: slog.New(slog.NewTextHandler(stderr, nil)),
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "collab: serving %s as %s; sign in (once) at:\n%s://%s%s\n", root, who, scheme, ln.Addr(), srv.SignInPath())
	if err := srv.Serve(ctx, ln, *certFile, *keyFile, 5*time.Second); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
