package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
)

var runServe = subcommands("serve", map[string]subFunc{"token": runServeToken}, runServeWeb)

func runServeWeb(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("serve", helpText("serve"), stderr)
	var c web.Config
	var sv web.Serving
	fs.StringVar(&sv.Listen, "listen", web.DefaultListen, "address to listen on (HOST:PORT)")
	person := fs.String("person", "", "who the signed-in people post as (default your login name)")
	fs.StringVar(&sv.CertFile, "tls-cert", "", "TLS certificate file (PEM)")
	fs.StringVar(&sv.KeyFile, "tls-key", "", "TLS private key file (PEM)")
	insecure := fs.Bool("insecure-http", false, "allow plain HTTP on a non-loopback address")
	fs.IntVar(&c.MaxStreams, "max-streams", web.DefaultMaxStreams, "open live event streams at most")
	fs.DurationVar(&c.Poll, "poll", web.DefaultPoll, "how often live streams look for new messages")
	fs.IntVar(&c.MaxMCP, "max-mcp", web.DefaultMaxMCP, "/mcp requests in progress at most")
	fs.StringArrayVar(&c.Hosts, "host", nil, "a name the server answers to (repeatable): NAME at the listen port, or NAME:PORT behind a proxy or tunnel")
	fs.DurationVar(&c.SignInTTL, "signin-ttl", web.DefaultSignInTTL, "how long the printed sign-in URL works")
	fs.DurationVar(&c.SessionIdle, "session-idle", web.DefaultSessionIdle, "a session unused this long ends")
	fs.DurationVar(&c.SessionMax, "session-max", web.DefaultSessionMax, "a session ends this long after sign-in, however used")
	fs.IntVar(&c.MaxStreamsPerPerson, "max-streams-per-person", 0, "one person's open live event streams at most (default a quarter of --max-streams, at least 1)")
	fs.IntVar(&c.MaxMCPPerToken, "max-mcp-per-token", 0, "one token's /mcp requests in progress at most (default a quarter of --max-mcp, at least 1)")
	fs.StringVar(&c.Tokens.Path, "tokens", web.DefaultTokensPath(getenv), tokensUsage)
	cf := addCommon(fs, withKey, withKeyring, withNATS, withRoot)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	c.Root = cf.tree(getenv)
	who, err := actingAgent(ctx, "serve", "person", *person)
	if err != nil {
		return err
	}
	if err := checkServe(c, sv, *insecure); err != nil {
		return err
	}
	if c.Signer, err = signing.LoadAgentKey(cf.keyPath(), who, getenv); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// The page verifies and signs for people: a keyring others could
	// rewrite is refused, as a watcher refuses it.
	ring, err := watchsetup.CheckedKeyring("serve", c.Root, *cf.ring, signing.Known, true, stderr)
	if err != nil {
		return err
	}
	c.Verifier = signing.NewVerifier(ring)
	// What the page posts is announced on NATS when it is configured.
	sp := cf.spec(getenv)
	sp.agent, sp.verifier, sp.nats = who, c.Verifier, true
	return useService(ctx, sp, getenv, stderr, func(svc *openedService) error {
		// A person's key, or an agent's default key as 'collab mcp --agent A'
		// would load it.
		loadKey := func(name string) (*signing.Signer, error) { return signing.LoadAgentKey("", name, getenv) }
		c.Person, c.Service, c.SignerFor, c.AgentSigner, c.TLS = who, svc.Service, loadKey, loadKey, sv.CertFile != ""
		c.Logger = slog.New(slog.NewTextHandler(stderr, nil))
		srv, err := web.New(c)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		return serveOn(ctx, srv, c.Root, who, sv, stdout, stderr)
	})
}

// serveOn serves srv on listen (TLS with the certificate and key when
// given) until ctx ends, after printing the sign-in URL; SIGHUP prints a
// new one.
func serveOn(ctx context.Context, srv *web.Server, root tree.Root, who string, sv web.Serving, stdout, stderr io.Writer) error {
	// Registered before the URL is printed: a SIGHUP sent on seeing it
	// does not end the server.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	sv.Hangup = hup
	sv.Announce = func(si web.SignIn) error { return printSignIn(si, root, who, stdout) }
	sv.Stopping = func(err error) { fmt.Fprintf(stderr, "collab: serve: %v: stopping\n", err) }
	return cmdErr("serve", srv.ListenAndServe(ctx, sv))
}

// printSignIn prints a sign-in URL: the first, or a fresh one.
func printSignIn(si web.SignIn, root tree.Root, who string, stdout io.Writer) error {
	if !si.Fresh {
		_, err := fmt.Fprintf(stdout, "collab: serving %s as %s; sign in (once, by %s) at:\n%s\n", root, who, si.Until.Format("15:04:05"), si.URL)
		return err
	}
	if _, err := fmt.Fprintf(stdout, "collab: a new sign-in URL (once, by %s; the last one no longer works):\n%s\n", si.Until.Format("15:04:05"), si.URL); err != nil {
		return fmt.Errorf("print the new sign-in URL: %w", err)
	}
	return nil
}

// checkServe refuses serve's flags that do not go together or are out
// of range.
func checkServe(c web.Config, sv web.Serving, insecure bool) error {
	lerr := web.CheckListen(sv.Listen, sv.CertFile != "" || insecure)
	switch {
	case (sv.CertFile == "") != (sv.KeyFile == ""):
		return usageErrorf("serve: --tls-cert and --tls-key go together")
	case errors.Is(lerr, web.ErrPlainRemote):
		return usageErrorf("serve: --listen %s is not loopback: use --tls-cert/--tls-key, or --insecure-http to serve plain HTTP anyway", sv.Listen)
	case lerr != nil:
		return usageErrorf("serve: --listen %q: %v", sv.Listen, lerr)
	case c.MaxStreams <= 0 || c.Poll <= 0 || c.MaxMCP <= 0:
		return usageErrorf("serve: --max-streams, --max-mcp and --poll must be positive")
	case c.SignInTTL <= 0 || c.SessionIdle <= 0 || c.SessionMax <= 0:
		return usageErrorf("serve: --signin-ttl, --session-idle and --session-max must be positive")
	case c.MaxStreamsPerPerson < 0 || c.MaxMCPPerToken < 0:
		return usageErrorf("serve: --max-streams-per-person and --max-mcp-per-token must not be negative")
	}
	return nil
}

// tokensUsage is --tokens': the file of long-lived tokens.
const tokensUsage = "file of the long-lived tokens (hashed)"

// runServeToken makes, lists and revokes the long-lived tokens
// (web.Tokens).
func runServeToken(ctx context.Context, _ string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "new" && args[0] != "ls" && args[0] != "rm") {
		return usageErrorf("serve token: use 'collab serve token new --person NAME', 'new --agent NAME [--channel CH]', 'ls' or 'rm ID'")
	}
	sub := args[0]
	fs := newFlags("serve token "+sub, stderr)
	req := web.TokenRequest{}
	fs.StringVar(&req.Person, "person", "", "new: who the token posts as (default your login name)")
	fs.StringVar(&req.Agent, "agent", "", "new: an agent's token instead, for /mcp only: the agent it acts as")
	fs.StringVar(&req.Channel, "channel", "", "new --agent: the only channel the token reaches (default: the one the URL names)")
	toks := web.Tokens{}
	fs.StringVar(&toks.Path, "tokens", web.DefaultTokensPath(getenv), tokensUsage)
	if sub == "rm" {
		if err := parseOne(fs, args[1:], getenv, "give one token id"); err != nil {
			return err
		}
		return cmdErr("serve token rm", toks.Remove(fs.Arg(0)))
	}
	if err := parseNone(fs, args[1:], getenv); err != nil {
		return err
	}
	if sub == "ls" {
		recs, err := toks.List()
		for _, r := range recs {
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name(), r.KindName(), r.Created.Format(time.RFC3339), r.Reach())
		}
		return cmdErr("serve token ls", err)
	}
	var err error
	if req.Agent == "" {
		if req.Person, err = actingAgent(ctx, "serve token new", "person", req.Person); err != nil {
			return err
		}
	}
	secret, rec, err := toks.Issue(req)
	if err != nil {
		return fmt.Errorf("serve token new: %w", err)
	}
	fmt.Fprintf(stderr, "collab: %s token %s for %s (shown once; 'collab serve token rm %s' revokes it)\n", rec.KindName(), rec.ID, rec.Name(), rec.ID)
	_, err = fmt.Fprintln(stdout, secret)
	return err
}
