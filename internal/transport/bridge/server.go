package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/presence"
)

// Defaults of [Config].
const (
	DefaultWorkers  = 8
	DefaultMaxReply = 1<<20 - 64<<10
)

// Config is what a [Server] serves and how.
type Config struct {
	Root     tree.Root
	Verifier *signing.Verifier // checks every signed file a request writes
	// Keyring is the ring the keys op hands to remote hosts, read through
	// the folder it checked (keyring.Ring.Check); default ROOT/keys,
	// unchecked.
	Keyring *keyring.Ring
	// Workers bounds the requests performed at once; default
	// DefaultWorkers. Requests beyond it wait in the subscription's
	// pending buffer (nats.go's limits; past them the client times out
	// and retries).
	Workers int
	// MaxReply bounds a reply's size; default DefaultMaxReply (the
	// server's default max_payload, 1 MiB, less room for headers).
	MaxReply int
	// Host is this host's name: a process is checked alive on it only.
	Host string
	// Presence, when set, is told each heartbeat written (natsbus's
	// PublishPresence), as a watcher publishes its own.
	Presence func(presence.Status) error
	Logger   *slog.Logger     // default slog.Default()
	Now      func() time.Time // default time.Now
	// Service is the tree's operations the requests call; default a
	// service.Mount on Root.
	Service *service.Mount
	// Metrics, if set, is the address Run serves Prometheus text on, at
	// GET /metrics (metrics.go).
	Metrics string
}

// Server performs requests on the tree. Handle is safe for concurrent use.
type Server struct {
	cfg Config
	svc *service.Mount // every operation on the tree
	log *slog.Logger
}

// New returns a server for cfg.
func New(cfg Config) *Server {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.MaxReply <= 0 {
		cfg.MaxReply = DefaultMaxReply
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Keyring == nil {
		cfg.Keyring = keyring.Open(cfg.Root.Keys())
	}
	if cfg.Verifier == nil {
		cfg.Verifier = signing.NewVerifier(nil)
	}
	svc := cfg.Service
	if svc == nil {
		svc = service.NewMount(service.Config{Root: cfg.Root, Host: cfg.Host, Now: cfg.Now, Logger: cfg.Logger, Verifier: cfg.Verifier})
	}
	return &Server{cfg: cfg, svc: svc, log: cfg.Logger}
}

// Serve subscribes [SubscribeSubject] in [QueueGroup] on nc and answers
// requests with at most Workers at once, until ctx is done; then it stops
// taking requests, waits for those under way, and returns nil. A request
// without a reply subject is performed and not answered. Serve is called
// once per Server.
func (s *Server) Serve(ctx context.Context, nc *natsbus.Conn) error {
	// The server's limit decides what a reply may hold (set before any
	// request is served).
	if mp := int(nc.MaxPayload()); mp > 0 && mp-64<<10 < s.cfg.MaxReply {
		s.cfg.MaxReply = max(mp-64<<10, mp/2)
	}
	q := natsbus.Queue{Subject: SubscribeSubject, Group: QueueGroup, Workers: s.cfg.Workers}
	err := natsbus.ServeQueue(ctx, nc, q, s.Handle, func(subject string, err error) {
		s.log.Warn("bridge: reply not sent", "subject", subject, "err", err)
	})
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	return nil
}

// Handle performs one request, received on subject with body data, and
// returns the reply's JSON. It never panics on any input: every failure is
// a reply with a code.
func (s *Server) Handle(subject string, data []byte) (out []byte) {
	start := s.cfg.Now()
	var res any
	op, agent, err := ParseSubject(subject)
	if err != nil {
		err = Errorf(CodeInvalid, "%v", err)
	} else {
		res, err = s.performSafely(op, agent, data)
	}
	if err != nil {
		f := Failure(err)
		level := slog.LevelInfo
		if f.Code == CodeInternal || f.Code == CodeUnavailable {
			level = slog.LevelWarn
		}
		if op == OpClaimFS && (f.Code == CodeNotFound || f.Code == CodeConflict) {
			level = slog.LevelDebug // how every claim looks for the next generation, and loses a race
		}
		s.log.Log(context.Background(), level, "bridge: request refused", "op", op, "agent", agent, "code", f.Code, "err", f.Error)
		if level > slog.LevelDebug {
			countRefused(op, f.Code)
		}
		res = f
	} else {
		s.log.Debug("bridge: request served", "op", op, "agent", agent, "took", s.cfg.Now().Sub(start))
	}
	b, err := json.Marshal(res)
	if err != nil {
		b, _ = json.Marshal(Failure(fmt.Errorf("encode reply: %w", err)))
	}
	return b
}

// performSafely is perform, with a panic (a bug) answered as internal
// instead of ending the bridge.
func (s *Server) performSafely(op, agent string, data []byte) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("bridge: panic serving a request", "op", op, "agent", agent, "panic", p, "stack", string(debug.Stack()))
			res, err = nil, Errorf(CodeInternal, "the bridge failed on this request")
		}
	}()
	return s.perform(op, agent, data)
}

func (s *Server) perform(op, agent string, data []byte) (any, error) {
	switch op {
	case OpKeys:
		return s.keys(data)
	case OpKills:
		return s.kills(agent, data)
	case OpPost:
		return s.post(agent, data)
	case OpPresence:
		return s.presence(agent, data)
	case OpRead:
		return s.read(data)
	case OpWho:
		return s.who(data)
	case OpStatus:
		return s.status(data)
	case OpKill:
		return s.kill(agent, data)
	case OpClaimFS:
		return s.claimFS(agent, data)
	case OpDoc:
		return s.doc(agent, data)
	case OpTask:
		return s.task(agent, data)
	}
	return nil, Errorf(CodeInvalid, "unknown op %q", op)
}

// classify turns a failure of the tree into a coded error: a full or
// failing disk is unavailable (retry later), then the kind the service
// layer gave it, then the library's sentinels.
func classify(what string, err error) error {
	var e *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return err
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EIO),
		errors.Is(err, syscall.EROFS), errors.Is(err, syscall.ESTALE), errors.Is(err, syscall.EAGAIN),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return Errorf(CodeUnavailable, "%s: %v", what, err)
	}
	if k, ok := errkind.Carried(err); ok && k != errkind.Failed {
		return Errorf(wireCode(k), "%s: %v", what, err)
	}
	switch {
	case errors.Is(err, tree.ErrBadName), errors.Is(err, channel.ErrMalformed),
		errors.Is(err, channel.ErrTooLarge), errors.Is(err, presence.ErrMalformed):
		return Errorf(CodeInvalid, "%s: %v", what, err)
	case errors.Is(err, fs.ErrNotExist):
		return Errorf(CodeNotFound, "%s: %v", what, err)
	}
	return Errorf(CodeInternal, "%s: %v", what, err)
}

func (s *Server) post(agent string, data []byte) (any, error) {
	var req PostRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	span := traceRelay(req.Channel, req.Message)
	r, err := s.svc.Relay(context.Background(), agent, req.Channel, req.Message)
	span.End()
	if err != nil {
		return nil, classify("post", err)
	}
	if !r.Existed {
		s.log.Info("bridge: posted", "channel", req.Channel, "msg", r.ID, "agent", agent)
	}
	return PostReply{Reply: Reply{OK: true}, ID: r.ID, Existed: r.Existed}, nil
}

func (s *Server) presence(agent string, data []byte) (any, error) {
	var req PresenceRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	st, err := s.svc.RelayPresence(context.Background(), agent, req.Presence)
	if err != nil {
		return nil, classify("presence", err)
	}
	if s.cfg.Presence != nil {
		_ = s.cfg.Presence(st) // a hint: the file is written; natsbus logs failures
	}
	return PresenceReply{Reply: Reply{OK: true}}, nil
}

// replyRoom is what a read reply's envelope takes besides its messages.
const replyRoom = 256

func (s *Server) read(data []byte) (any, error) {
	var req ReadRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	limit := req.Limit
	switch {
	case limit < 0:
		return nil, Errorf(CodeInvalid, "read: limit %d is negative", limit)
	case limit == 0:
		limit = DefaultReadLimit
	case limit > MaxReadLimit:
		limit = MaxReadLimit
	}
	p, err := s.svc.Read(context.Background(), service.ReadRequest{Channel: req.Channel, Since: req.Since, After: req.After, Limit: limit})
	if err != nil {
		return nil, classify("read", err)
	}
	if req.After != "" {
		out, cut, err := s.readReply(slices.All(p.Messages))
		if err != nil {
			return nil, err
		}
		out.More = p.More || cut
		return out, nil
	}
	// A reply too small for them all keeps the newest.
	out, cut, err := s.readReply(slices.Backward(p.Messages))
	if err != nil {
		return nil, err
	}
	slices.Reverse(out.Messages)
	out.More = p.More || cut
	return out, nil
}

// readReply encodes messages in the order given until the reply is full
// (cut then reports that some were left out), each a stand-in when too
// big for any reply.
func (s *Server) readReply(msgs iter.Seq2[int, channel.Message]) (out ReadReply, cut bool, err error) {
	out = ReadReply{Reply: Reply{OK: true}, Messages: []json.RawMessage{}}
	size := replyRoom
	for _, m := range msgs {
		// The file's id, even over a foreign writer's own "id": what a
		// reader pages with and files the message under.
		m.ID = m.Key()
		b, err := m.Encode()
		if err != nil {
			return out, false, classify("read: encode "+m.ID, err)
		}
		if len(b)+replyRoom > s.cfg.MaxReply {
			b, _ = json.Marshal(Omitted{ID: m.Key(), Omitted: fmt.Sprintf("%d bytes: larger than a bridge reply", len(b))})
		}
		if size+len(b)+1 > s.cfg.MaxReply {
			return out, true, nil
		}
		size += len(b) + 1
		out.Messages = append(out.Messages, b)
	}
	return out, false, nil
}

func (s *Server) who(data []byte) (any, error) {
	var req WhoRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	rows, err := s.svc.Who(context.Background(), service.WhoRequest{Warn: func(msg string) {
		s.log.Warn("bridge: who: " + msg)
	}})
	if err != nil {
		return nil, classify("who", err)
	}
	b, err := json.Marshal(delivery.WhoEntries(rows, s.cfg.Now()))
	if err != nil {
		return nil, classify("who: encode", err)
	}
	return WhoReply{Reply: Reply{OK: true}, Agents: b}, nil
}

func (s *Server) status(data []byte) (any, error) {
	var req StatusRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	st, err := s.svc.Status(context.Background(), service.StatusRequest{ID: req.Message})
	if err != nil {
		return nil, classify("status", err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, classify("status: encode", err)
	}
	return StatusReply{Reply: Reply{OK: true}, Status: b}, nil
}

func (s *Server) kill(agent string, data []byte) (any, error) {
	var req KillRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	if err := tree.CheckName("agent", req.Of); err != nil {
		return nil, Errorf(CodeInvalid, "kill: of: %v", err)
	}
	if req.Job == "" || len(req.Kill) == 0 {
		return nil, Errorf(CodeInvalid, "kill: needs job and kill")
	}
	var k jobs.Kill
	if err := json.Unmarshal(req.Kill, &k); err != nil {
		return nil, Errorf(CodeInvalid, "kill: %v", err)
	}
	// Authentication is the door's: the request must be the NATS user's,
	// signed with its key. Who may kill what is the service's (by name,
	// never as the admin: the bridge's account may be the admin's).
	if k.By != agent {
		return nil, Errorf(CodeForbidden, "kill: the request is by %q, not %q", k.By, agent)
	}
	if v := k.Verify(s.cfg.Verifier, req.Of, req.Job); v != signing.Verified {
		return nil, Errorf(CodeForbidden, "kill: %s's signature: %s", agent, v)
	}
	_, err := s.svc.KillJob(context.Background(), service.Actor{Name: agent}, service.KillRequest{Job: req.Job, Of: req.Of, Signed: &k})
	if err != nil {
		return nil, classify("kill", err)
	}
	return KillReply{Reply: Reply{OK: true}}, nil
}
