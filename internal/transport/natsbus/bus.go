package natsbus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// StreamName is the JetStream stream used when it exists.
const StreamName = "CHAT"

// Subject prefixes (docs/protocol.md#nats).
const (
	ChatPrefix     = "collab.chat."
	PresencePrefix = "collab.presence."
)

// MsgIDHeader is the header that carries a message's id.
const MsgIDHeader = jetstream.MsgIDHeader

// Defaults of Options.
const (
	DefaultConnectTimeout = 2 * time.Second
	// DefaultReconnectWait: a client that just missed a server coming
	// back tries again this soon (2 s made a remote watcher answer up to
	// 2 s late after a NATS restart: faults scenario 22).
	DefaultReconnectWait  = 500 * time.Millisecond
	DefaultPublishTimeout = 2 * time.Second
)

// streamRecheck is how often the stream's existence is checked besides
// connects and reconnects.
const streamRecheck = time.Minute

// logEvery rate-limits repeated warnings.
const logEvery = 10 * time.Second

// Log attribute keys.
const (
	keyErr        = "err"
	keyURL        = "url"
	keyChannel    = "channel"
	keyMsg        = "msg_id"
	keyAgent      = "agent"
	keySuppressed = "suppressed"
	keySubject    = "subject"
	keyStream     = "stream"
)

var (
	// ErrAuth is wrapped by Connect's error when the server refused the
	// credentials, or wanted some and got none.
	ErrAuth = errors.New("natsbus: authorization failed")
	// ErrUnreachable is wrapped by Connect's error when no server answered.
	ErrUnreachable = errors.New("natsbus: server unreachable")
	// ErrNoJetStream is wrapped by the stream functions' errors when the
	// server (or the account) has no JetStream.
	ErrNoJetStream = errors.New("natsbus: JetStream is not enabled on the server")
)

// noJetStream reports whether err means JetStream is not available: no
// one answers the JetStream API, or it says it is disabled.
func noJetStream(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount)
}

// streamError wraps an error of the stream API with context.
func streamError(op string, err error) error {
	if noJetStream(err) {
		return fmt.Errorf("%w (%s): %w", ErrNoJetStream, op, err)
	}
	return fmt.Errorf("natsbus: %s: %w", op, err)
}

// Options says where and how to connect. URL is required (see [ParseURLs]
// for the list of servers it may name); the credential
// fields are exclusive: at most one of CredsFile, NKeySeedFile, User (with
// Password) and Token. Credentials may also be given in the URL
// (nats://user:password@host, nats://token@host). Zero durations take the
// Default constants.
type Options struct {
	URL  string // one or more comma-separated nats:// or tls:// URLs: ParseURLs
	Name string // connection name; see ConnName

	CredsFile    string // a .creds file (user JWT and nkey seed)
	NKeySeedFile string // a file holding a user nkey seed (SU…)
	User         string
	Password     string
	Token        string

	TLSCA   string // PEM file of the CA that signed the server's certificate
	TLSCert string // PEM client certificate, with TLSKey
	TLSKey  string

	ConnectTimeout time.Duration // per dial and handshake
	ReconnectWait  time.Duration // between reconnect attempts
	PublishTimeout time.Duration // wait for a JetStream ack or a flush

	// KeepTrying makes Connect return a Bus that keeps trying in the
	// background when no server can be reached at start, instead of
	// failing. An authorization failure is always returned at once.
	KeepTrying bool

	// InboxPrefix replaces "_INBOX" as the prefix of request reply
	// subjects (nats.CustomInboxPrefix), so a server's permissions can
	// allow a user replies on its own inboxes only.
	InboxPrefix string

	Logger *slog.Logger // default slog.Default()
}

// OptionsFromEnv returns the options set by the environment: NATS_URL,
// NATS_CREDS, NATS_NKEY, NATS_USER, NATS_PASSWORD, NATS_TOKEN, NATS_CA,
// NATS_CERT and NATS_KEY.
func OptionsFromEnv(getenv func(string) string) Options {
	return Options{
		URL:          getenv("NATS_URL"),
		CredsFile:    getenv("NATS_CREDS"),
		NKeySeedFile: getenv("NATS_NKEY"),
		User:         getenv("NATS_USER"),
		Password:     getenv("NATS_PASSWORD"),
		Token:        getenv("NATS_TOKEN"),
		TLSCA:        getenv("NATS_CA"),
		TLSCert:      getenv("NATS_CERT"),
		TLSKey:       getenv("NATS_KEY"),
	}
}

// ConnName returns the connection name of an agent's process on a host:
// collab-AGENT@HOST.
func ConnName(agent, host string) string { return "collab-" + agent + "@" + host }

// ChatSubject returns the subject of a channel's messages.
func ChatSubject(ch string) string { return ChatPrefix + ch }

// PresenceSubject returns the subject of an agent's heartbeats.
func PresenceSubject(agent string) string { return PresencePrefix + agent }

func (o *Options) check() error {
	urls, err := ParseURLs(o.URL)
	if err != nil {
		return err
	}
	o.URL = strings.Join(urls, ",")
	var creds []string
	add := func(set bool, kind string) {
		if set {
			creds = append(creds, kind)
		}
	}
	add(o.CredsFile != "", "a credentials file")
	add(o.NKeySeedFile != "", "an nkey seed")
	add(o.User != "", "a user and password")
	add(o.Token != "", "a token")
	if len(creds) > 1 {
		return fmt.Errorf("natsbus: give one kind of credentials, not %s", strings.Join(creds, " and "))
	}
	if o.Password != "" && o.User == "" {
		return errors.New("natsbus: a password without a user")
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("natsbus: a TLS client certificate needs both the certificate and its key")
	}
	return nil
}

// Stats counts what a Bus did since Connect.
type Stats struct {
	Published   int64 // messages and heartbeats sent (a JetStream ack, or handed to core NATS)
	Duplicates  int64 // JetStream acks saying the stream already had the message
	Failed      int64 // publishes that failed
	Received    int64 // messages decoded by subscriptions
	Rejected    int64 // payloads on a chat subject that are not a valid message
	Disconnects int64
	Reconnects  int64
}

type counters struct {
	published, duplicates, failed, received, rejected, disconnects, reconnects atomic.Int64
}

// Bus is a connection to NATS. It is safe for concurrent use.
type Bus struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	log     *slog.Logger
	url     string // redacted, for messages
	timeout time.Duration

	useJS      atomic.Bool
	jsKnown    atomic.Bool   // the stream has been checked once
	background bool          // the first connection is made in the background
	recheck    chan struct{} // asks the monitor to check the stream now
	ctx        context.Context
	stop       context.CancelFunc // ends the monitor; called by Close and Drain
	done       chan struct{}      // closed when the monitor has returned
	closed     chan struct{}      // closed by nats.go's closed handler

	mu     sync.Mutex
	resync map[chan struct{}]struct{} // notified after reconnects and dropped messages

	stats    counters
	failLog  limiter
	connLog  limiter
	asyncLog limiter
}

// Connect connects to the server and returns once connected. An
// authorization failure returns an error wrapping ErrAuth, and a server
// that cannot be reached one wrapping ErrUnreachable (unless KeepTrying),
// both within about ConnectTimeout per server. Once connected, the Bus
// reconnects by itself, forever, and logs each disconnect and reconnect.
//
// Given several servers (a cluster), it connects to one picked at random
// and, when that one goes, to another of the list or of those the cluster
// advertised, at once (the same server is tried again no sooner than
// ReconnectWait, plus nats.go's jitter). Subscriptions are made again on
// the new server; a JetStream publish in flight when the connection broke
// fails and is not retried here (the bridge's publisher publishes it again
// with the same Nats-Msg-Id, and the stream drops the copy).
func Connect(ctx context.Context, o Options) (*Bus, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name == "" {
		o.Name = "collab"
	}
	b := &Bus{
		log:     o.Logger,
		url:     redact(o.URL),
		timeout: or(o.PublishTimeout, DefaultPublishTimeout),
		recheck: make(chan struct{}, 1),
		done:    make(chan struct{}),
		closed:  make(chan struct{}),
		resync:  make(map[chan struct{}]struct{}),
	}
	opts, err := b.natsOptions(o)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil && o.KeepTrying && unreachable(err) {
		b.log.Warn("nats server unreachable; connecting in the background", keyURL, b.url, keyErr, err)
		b.background = true
		nc, err = nats.Connect(o.URL, append(opts, nats.RetryOnFailedConnect(true))...)
	}
	if err != nil {
		return nil, connectError(b.url, o, err)
	}
	b.nc = nc
	b.ctx, b.stop = context.WithCancel(context.Background())
	b.js, err = jetstream.New(nc)
	if err != nil {
		b.stop()
		nc.Close()
		return nil, fmt.Errorf("natsbus: jetstream: %w", err)
	}
	if nc.IsConnected() { // onConnect logs it
		b.detect(ctx)
	}
	go b.monitor()
	return b, nil
}

func (b *Bus) natsOptions(o Options) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.Timeout(or(o.ConnectTimeout, DefaultConnectTimeout)),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(or(o.ReconnectWait, DefaultReconnectWait)),
		// No reconnect buffer: a publish while disconnected fails at once
		// rather than being replayed, stale, after the reconnect.
		nats.ReconnectBufSize(-1),
		// Keep trying when credentials are refused on a reconnect: an
		// operator may fix them; the start-up check catches the common case.
		nats.IgnoreAuthErrorAbort(),
		// Notice a dead server within about a minute (the default is 4).
		nats.PingInterval(20 * time.Second),
		nats.MaxPingsOutstanding(2),
		nats.FlusherTimeout(or(o.PublishTimeout, DefaultPublishTimeout)),
		nats.DrainTimeout(5 * time.Second),
		nats.DisconnectErrHandler(b.onDisconnect),
		nats.ReconnectHandler(b.onReconnect),
		nats.ConnectHandler(b.onConnect),
		nats.ReconnectErrHandler(b.onReconnectErr),
		nats.ClosedHandler(func(*nats.Conn) { closeOnce(b.closed) }),
		nats.ErrorHandler(b.onAsyncErr),
	}
	if o.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	switch {
	case o.CredsFile != "":
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	case o.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(o.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("natsbus: nkey seed %s: %w", o.NKeySeedFile, err)
		}
		opts = append(opts, opt)
	case o.User != "":
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	case o.Token != "":
		opts = append(opts, nats.Token(o.Token))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	return opts, nil
}

func connectError(url string, o Options, err error) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired),
		errors.Is(err, nats.ErrAuthRevoked), errors.Is(err, nats.ErrAccountAuthExpired):
		hint := "check the credentials"
		if o.CredsFile == "" && o.NKeySeedFile == "" && o.User == "" && o.Token == "" && !strings.Contains(o.URL, "@") {
			hint = "the server wants credentials and none were given: NATS_CREDS, NATS_NKEY, NATS_USER and NATS_PASSWORD, or NATS_TOKEN"
		}
		return fmt.Errorf("%w at %s (%s): %w", ErrAuth, url, hint, err)
	case unreachable(err):
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, url, err)
	}
	return fmt.Errorf("natsbus: connect to %s: %w", url, err)
}

// unreachable reports whether a connect error means no server answered,
// as opposed to one that answered and refused: a failed dial, but also a
// handshake that timed out or broke (a stopped or dying server accepts the
// TCP connection in its kernel and never sends INFO). A connection closed
// right after a TLS handshake is a server that refused the client's
// certificate (nats.go wraps that in ErrTLS), however the close shows.
func unreachable(err error) bool {
	if errors.Is(err, nats.ErrTLS) {
		return false
	}
	var op *net.OpError
	return errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) ||
		errors.As(err, &op) && (op.Op == "dial" || op.Timeout()) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}

// redact hides the user information of each URL in a comma-separated list.
func redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := url.Parse(p); err == nil && u.User != nil {
			u.User = url.User("redacted")
			p = u.String()
		} else if err != nil && strings.Contains(p, "@") {
			p = "redacted" + p[strings.LastIndexByte(p, '@'):]
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// The nats.go callbacks run one at a time on its callback goroutine.

func (b *Bus) onDisconnect(nc *nats.Conn, err error) {
	b.stats.disconnects.Add(1)
	if nc.IsClosed() {
		return
	}
	b.log.Warn("nats disconnected; reconnecting", keyURL, b.url, keyErr, err)
}

func (b *Bus) onReconnect(nc *nats.Conn) {
	b.stats.reconnects.Add(1)
	b.log.Info("nats reconnected", keyURL, nc.ConnectedUrlRedacted())
	b.connected()
}

// onConnect is called once the first connection is made, at once or in
// the background (KeepTrying).
func (b *Bus) onConnect(nc *nats.Conn) {
	b.log.Info("nats connected", keyURL, nc.ConnectedUrlRedacted())
	if b.background { // else Connect checked the stream
		b.connected()
	}
}

func (b *Bus) connected() {
	select {
	case b.recheck <- struct{}{}:
	default:
	}
	b.notifyResync()
}

func (b *Bus) onReconnectErr(_ *nats.Conn, err error) {
	if ok, n := b.connLog.allow(); ok {
		b.log.Warn("nats reconnect failed; retrying", keyURL, b.url, keyErr, err, keySuppressed, n)
	}
}

func (b *Bus) onAsyncErr(_ *nats.Conn, sub *nats.Subscription, err error) {
	if sub != nil && errors.Is(err, nats.ErrSlowConsumer) {
		b.notifyResync() // messages were dropped: poll now
	}
	if ok, n := b.asyncLog.allow(); ok {
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		b.log.Warn("nats error", keySubject, subject, keyErr, err, keySuppressed, n)
	}
}

// notifyResync tells every subscriber that messages may have been missed.
func (b *Bus) notifyResync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.resync {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (b *Bus) onResync() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	b.mu.Lock()
	b.resync[c] = struct{}{}
	b.mu.Unlock()
	return c, func() {
		b.mu.Lock()
		delete(b.resync, c)
		b.mu.Unlock()
	}
}

// monitor keeps useJS current until the Bus stops.
func (b *Bus) monitor() {
	defer close(b.done)
	tick := time.NewTicker(streamRecheck)
	defer tick.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.recheck:
		case <-tick.C:
		}
		b.detect(b.ctx)
	}
}

// detect checks whether the stream exists. An answer that is neither yes
// nor no (a timeout) leaves the last answer in place.
func (b *Bus) detect(ctx context.Context) {
	if !b.nc.IsConnected() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	_, err := b.js.Stream(ctx, StreamName)
	var use bool
	switch {
	case err == nil:
		use = true
	case errors.Is(err, jetstream.ErrStreamNotFound), noJetStream(err):
		use = false
	default:
		if b.ctx.Err() == nil {
			b.log.Warn("nats stream check failed", keyStream, StreamName, keyErr, err)
		}
		return
	}
	first := !b.jsKnown.Swap(true)
	if b.useJS.Swap(use) != use || first {
		if use {
			b.log.Info("nats publishing to jetstream", keyStream, StreamName)
		} else {
			b.log.Info("nats publishing with core nats: no jetstream stream", keyStream, StreamName)
		}
	}
}

// streamThere reports whether the stream may exist and cover every
// channel: only a clear "not found" or "no JetStream", or a stream whose
// subjects are not collab.chat.>, says no.
func (b *Bus) streamThere(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	s, err := b.js.Stream(ctx, StreamName)
	if err == nil {
		return slices.Contains(s.CachedInfo().Config.Subjects, ChatPrefix+">")
	}
	return !errors.Is(err, jetstream.ErrStreamNotFound) && !noJetStream(err)
}

// Conn returns the underlying connection, for the packages that build on
// the Bus (bridge, remote): request/reply and subscriptions of their own.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// JetStream reports whether messages are published to the stream.
func (b *Bus) JetStream() bool { return b.useJS.Load() }

// Stats returns the counts so far.
func (b *Bus) Stats() Stats {
	s := &b.stats
	return Stats{
		Published:   s.published.Load(),
		Duplicates:  s.duplicates.Load(),
		Failed:      s.failed.Load(),
		Received:    s.received.Load(),
		Rejected:    s.rejected.Load(),
		Disconnects: s.disconnects.Load(),
		Reconnects:  s.reconnects.Load(),
	}
}

// PublishMessage publishes m, whose file is in place, to its channel's
// subject with its id in the Nats-Msg-Id header: to the stream when it
// exists (waiting at most PublishTimeout for the ack), else on core NATS.
// It never retries and never blocks longer than PublishTimeout. A failure
// is counted and logged (rate-limited) here; the error is returned for a
// caller that reports it elsewhere, such as a command's stderr, and need
// not be logged again.
func (b *Bus) PublishMessage(ctx context.Context, m *channel.Message) error {
	id := m.Key()
	err := b.publishMessage(ctx, m, id)
	if err != nil {
		b.failed("nats publish failed", err, keyChannel, m.SessionID, keyMsg, id)
		return fmt.Errorf("natsbus: publish %s: %w", id, err)
	}
	return nil
}

func (b *Bus) publishMessage(ctx context.Context, m *channel.Message, id string) error {
	if err := tree.CheckName("channel", m.SessionID); err != nil {
		return err
	}
	if id == "" {
		return errors.New("message has no id")
	}
	data, err := m.Encode()
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: ChatSubject(m.SessionID), Data: data, Header: nats.Header{}}
	msg.Header.Set(MsgIDHeader, id)
	if b.useJS.Load() {
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		ack, err := b.js.PublishMsg(ctx, msg, jetstream.WithRetryAttempts(0))
		switch {
		case err == nil:
			b.stats.published.Add(1)
			if ack.Duplicate {
				b.stats.duplicates.Add(1)
				b.log.Debug("nats stream already had the message", keyChannel, m.SessionID, keyMsg, id)
			}
			return nil
		case !errors.Is(err, jetstream.ErrNoStreamResponse):
			return err
		case b.streamThere(ctx):
			// No one answers for a stream that is there: on a cluster,
			// its leader is gone and the others elect a new one. Fail,
			// so the caller publishes again, rather than send a message
			// the stream would not store.
			return err
		}
		// The stream is gone, or does not cover this subject: go on with
		// core NATS and look again.
		b.useJS.Store(false)
		select {
		case b.recheck <- struct{}{}:
		default:
		}
		msg = &nats.Msg{Subject: msg.Subject, Data: data, Header: msg.Header}
	}
	if err := b.nc.PublishMsg(msg); err != nil {
		return err
	}
	b.stats.published.Add(1)
	return nil
}

// PublishPresence publishes a heartbeat on core NATS; an empty Timestamp is
// sent as the current time. Failures are handled as by PublishMessage.
func (b *Bus) PublishPresence(s presence.Status) error {
	err := b.publishPresence(s)
	if err != nil {
		b.failed("nats presence publish failed", err, keyAgent, s.AgentID)
		return fmt.Errorf("natsbus: publish presence of %s: %w", s.AgentID, err)
	}
	return nil
}

func (b *Bus) publishPresence(s presence.Status) error {
	if err := tree.CheckName("agent", s.AgentID); err != nil {
		return err
	}
	if s.Timestamp == "" {
		s.Timestamp = presence.FormatTime(time.Now())
	}
	data, err := s.Encode()
	if err != nil {
		return err
	}
	if err := b.nc.Publish(PresenceSubject(s.AgentID), data); err != nil {
		return err
	}
	b.stats.published.Add(1)
	return nil
}

func (b *Bus) failed(msg string, err error, attrs ...any) {
	b.stats.failed.Add(1)
	if ok, n := b.failLog.allow(); ok {
		b.log.Warn(msg, append(attrs, keyErr, err, keySuppressed, n)...)
	}
}

// Close sends what is buffered (waiting at most PublishTimeout) and closes
// the connection. Subscriptions end.
func (b *Bus) Close() {
	b.halt()
	if b.nc.IsConnected() {
		_ = b.nc.FlushTimeout(b.timeout)
	}
	b.nc.Close()
}

// Drain lets subscriptions finish the messages they have, sends what is
// buffered, and closes the connection, within a few seconds.
func (b *Bus) Drain() error {
	b.halt()
	if err := b.nc.Drain(); err != nil {
		b.nc.Close()
		if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionReconnecting) {
			return nil
		}
		return fmt.Errorf("natsbus: drain: %w", err)
	}
	select {
	case <-b.closed:
	case <-time.After(10 * time.Second):
		b.nc.Close()
		return errors.New("natsbus: drain did not finish")
	}
	return nil
}

func (b *Bus) halt() {
	b.stop()
	<-b.done
}

// limiter lets a repeated log line through at most once per logEvery and
// counts the ones it held back.
type limiter struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (l *limiter) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < logEvery {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}
