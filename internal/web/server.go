package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
)

// Defaults of Config's zero fields.
const (
	DefaultListen     = "127.0.0.1:8765"
	DefaultMaxStreams = 64
	DefaultPoll       = 2 * time.Second
	// MaxBody bounds a request body: a message at its cap, JSON-escaped,
	// fits.
	MaxBody = 1 << 20
)

// Config is what a Server serves and how.
type Config struct {
	Root   tree.Root
	Person string // who the signed-in people post as
	// Signer signs what the page posts as Person; nil posts unsigned.
	Signer *signing.Signer
	// Verifier gives each message's verdict; nil shows every signed
	// message as unknown-key.
	Verifier *signing.Verifier
	// Tokens are the long-lived bearer tokens; the zero value has none.
	Tokens Tokens
	// SignerFor returns the signer of a person other than Person (one
	// signed in with a token); nil, or a nil signer, posts unsigned.
	SignerFor  func(person string) (*signing.Signer, error)
	TLS        bool          // served over TLS: cookies are Secure
	MaxStreams int           // open event streams at most; 0: DefaultMaxStreams
	Poll       time.Duration // event streams look for new messages this often; 0: DefaultPoll
	Logger     *slog.Logger
	// Service is the tree's operations the API and the page call;
	// default a service.Mount on Root.
	Service service.Service

	// Hosts are the names the server answers to besides its address (and,
	// on loopback, localhost): "NAME" at the port it listens on, or
	// "NAME:PORT" (behind a proxy or a tunnel). Any other Host gets 421.
	Hosts []string
	// SessionIdle ends a session unused this long; SessionMax, any session
	// this old; SignInTTL, the printed sign-in URL. 0: the defaults.
	SessionIdle, SessionMax, SignInTTL time.Duration

	// MaxStreamsPerPerson bounds one person's open event streams (all
	// their sessions and tokens); 0: a quarter of MaxStreams, at least 1.
	MaxStreamsPerPerson int

	// AgentSigner returns the signer of an agent that reaches /mcp with
	// its token (mcp.go); nil, or a nil signer, posts unsigned.
	AgentSigner func(agent string) (*signing.Signer, error)
	MaxMCP      int // /mcp requests in progress at most; 0: DefaultMaxMCP
	// MaxMCPPerToken bounds one token's /mcp requests in progress; 0: a
	// quarter of MaxMCP, at least 1.
	MaxMCPPerToken int
}

// Server is the web face of one tree.
type Server struct {
	cfg     Config
	svc     service.Service // every operation on the tree
	log     *slog.Logger
	auth    *auth
	streams *slots        // a slot per open event stream, per person
	done    chan struct{} // closed by Close: streams end
	once    sync.Once
}

// New returns a server for cfg, with a fresh one-time sign-in token.
func New(cfg Config) (*Server, error) {
	if cfg.Root == "" {
		return nil, errors.New("web: no root")
	}
	if err := tree.CheckName("person", cfg.Person); err != nil {
		return nil, err
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	cfg.MaxStreamsPerPerson = perHolder(cfg.MaxStreamsPerPerson, cfg.MaxStreams)
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Verifier == nil {
		cfg.Verifier = signing.NewVerifier(nil)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.sessionDefaults(); err != nil {
		return nil, err
	}
	a, err := newAuth(cfg)
	if err != nil {
		return nil, err
	}
	svc := cfg.Service
	if svc == nil {
		svc = service.NewMount(service.Config{Root: cfg.Root, Logger: log, Verifier: cfg.Verifier})
	}
	return &Server{cfg: cfg, svc: svc, log: log, auth: a,
		streams: newSlots(cfg.MaxStreams, cfg.MaxStreamsPerPerson), done: make(chan struct{})}, nil
}

// SignInPath is the path and query of the one-time sign-in URL; prefix it
// with the server's base URL. It works once, until SignInExpires or
// NewSignIn.
func (s *Server) SignInPath() string {
	t, _ := s.auth.current()
	return signInPath(t)
}

// SignInExpires is when the sign-in URL stops working.
func (s *Server) SignInExpires() time.Time {
	_, until := s.auth.current()
	return until
}

// sessionDefaults fills the zero lifetimes of the sessions and the
// sign-in URL, and checks the names in Hosts.
func (cfg *Config) sessionDefaults() error {
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.SessionMax <= 0 {
		cfg.SessionMax = DefaultSessionMax
	}
	if cfg.SignInTTL <= 0 {
		cfg.SignInTTL = DefaultSignInTTL
	}
	for _, h := range cfg.Hosts {
		if h == "" || strings.ContainsAny(h, "/ \t@") {
			return fmt.Errorf("web: bad host name %q", h)
		}
	}
	return nil
}

// Close ends the open event streams; Serve calls it on shutdown.
func (s *Server) Close() { s.once.Do(func() { close(s.done) }) }

// Handler returns the whole app: every route behind the headers, the
// Host check, the cross-site check and the sign-in.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routeAPI(mux)
	s.routePages(mux)
	mux.Handle("GET /metrics", s.metricsHandler()) // metrics.go
	open := http.NewServeMux()
	open.HandleFunc("GET /signin", s.signin)
	open.HandleFunc("POST /signin", s.signinToken) // the sign-in page's token form
	open.HandleFunc("POST /signout", s.signout)
	open.Handle("/mcp", s.mcpHandler()) // an agent's token, not a person's session (mcp.go)
	open.Handle("/", s.auth.require(mux))
	return headers(s.checkHost(sameOrigin(limitBody(open))))
}

// HTTPServer returns an http.Server for Handler with timeouts a slow
// client cannot outlast. Event streams lift their read and write
// deadlines: they are bounded in number instead, and end on Close.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Serve serves on ln until ctx ends, then shuts down within grace.
// certFile and keyFile, when set, serve TLS.
func (s *Server) Serve(ctx context.Context, ln net.Listener, certFile, keyFile string, grace time.Duration) error {
	hs := s.HTTPServer()
	errc := make(chan error, 1)
	go func() {
		if certFile != "" {
			errc <- hs.ServeTLS(ln, certFile, keyFile)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.Close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	<-errc
	return err
}

// IsLoopback reports whether a listen address binds loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
