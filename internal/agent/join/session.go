package join

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/workspace/inbox"
	"github.com/collabdev/collab/presence"
)

// Session is one joined session's delivery state: the messages queued
// for the CLI, those offered and not answered yet, and the transcripts
// to look for reads in. The loop (run) fills the queue and watches for
// reads and answers; the CLI's mechanism takes from the queue (take) and
// says what it could hand over (offered, putBack). Safe for concurrent
// use.
type Session struct {
	cfg     Config
	cli     string
	owner   claim.Owner
	claims  *claim.Store
	inbox   *inbox.Inbox
	started time.Time
	replies map[string]*channel.Reader // by channel: for the session's answers

	mu          sync.Mutex
	pending     Batch
	known       map[string]bool   // queued, handed over or offered: not queued again
	offered     map[string]*offer // offered and not answered, by id
	grew        chan struct{}     // closed when pending grows
	transcripts map[string]*transcript
	waiter      context.CancelFunc // ends the waiting hook a newer one replaces
}

type offer struct {
	item Item
	read bool
}

func newSession(cfg Config, cli string) (*Session, error) {
	in, err := inbox.New(cfg.Root, cfg.Agent, inbox.Options{Channels: cfg.Channels, Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	owner := claim.Self(cfg.Agent)
	owner.Instance = jobs.NewInstance()
	if cfg.Host != "" {
		owner.Host = cfg.Host
	}
	s := &Session{cfg: cfg, cli: cli, owner: owner, inbox: in, started: cfg.Now(),
		claims:  &claim.Store{Root: cfg.Root, Self: owner, Signer: cfg.Signer, Verifier: cfg.Verifier, Trust: cfg.Trust, Now: cfg.Now},
		replies: make(map[string]*channel.Reader), known: make(map[string]bool), offered: make(map[string]*offer),
		grew: make(chan struct{}), transcripts: make(map[string]*transcript)}
	for _, ch := range cfg.Channels {
		r, err := channel.NewReader(cfg.Root, ch, channel.Cursor{Floor: s.started.Add(-channel.DefaultSkewWindow)}, channel.ReaderOptions{})
		if err != nil {
			return nil, err
		}
		if err := r.SeekEnd(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		s.replies[ch] = r
	}
	return s, nil
}

// run is the loop: it polls the inbox and the channels, looks for reads,
// and beats, until ctx ends; then it writes OFFLINE. A wake-up (inotify, a
// NATS announcement) makes it poll at once.
func (s *Session) run(ctx context.Context) {
	poll := time.NewTicker(s.cfg.Poll)
	defer poll.Stop()
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	wake := s.startWakers(ctx)
	s.beat(presence.StateAwake)
	for {
		s.poll()
		s.lookForReads()
		s.lookForAnswers()
		select {
		case <-ctx.Done():
			s.beat(presence.StateOffline)
			return
		case <-poll.C:
		case <-wake:
		case <-beat.C:
			s.beat(presence.StateAwake)
		}
	}
}

// startWakers runs inotify on the channels and, with Config.NATS, the
// NATS subscription, until ctx ends; the channel returned receives their
// wake-ups. An announced message for the agent is queued at once (read by
// its file's name, else as announced: a collab writer announces after the
// file is written, and its signature is judged as the file's would be),
// so that a host whose mount has not listed the file yet need not wait.
func (s *Session) startWakers(ctx context.Context) <-chan struct{} {
	wake := make(chan struct{}, 1)
	ping := func(string, string) {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	go fswake.Channels{Root: s.cfg.Root}.Watch(ctx, s.cfg.Channels, ping)
	if s.cfg.NATS == nil || s.cfg.NATS.URL == "" {
		return wake
	}
	o := *s.cfg.NATS
	o.KeepTrying, o.Logger = true, s.cfg.Logger
	bus, err := natsbus.Connect(ctx, o)
	if err != nil {
		s.cfg.Logger.Warn("no NATS; polling only", "err", err)
		return wake
	}
	context.AfterFunc(ctx, func() { bus.Drain() })
	go natsbus.Waker{Bus: bus, OnMessage: s.announced}.Watch(ctx, s.cfg.Channels, ping)
	return wake
}

// announced queues m, announced over NATS, if it is for the agent and new.
func (s *Session) announced(m channel.Message) {
	if !slices.Contains(s.cfg.Channels, m.SessionID) || !m.IsForAny(s.cfg.Agent) {
		return
	}
	if f, err := channel.Lookup(s.cfg.Root, m.SessionID, m.ID); err == nil {
		m = f
	} else if m.File == "" {
		m.File = m.ID + ".json"
	}
	s.queue([]inbox.Item{{Channel: m.SessionID, Message: m}})
}

// poll queues what is unread in the inbox and new to the session.
func (s *Session) poll() {
	items, err := s.inbox.Peek()
	if err != nil {
		s.cfg.Logger.Warn("cannot read the inbox", "err", err)
		return
	}
	s.queue(items)
}

// queue queues the items new to the session, each marked seen.
func (s *Session) queue(items []inbox.Item) {
	var fresh Batch
	for _, it := range items {
		m := it.Message
		s.mu.Lock()
		known := s.known[m.ID]
		s.known[m.ID] = true
		s.mu.Unlock()
		if known {
			continue
		}
		v := m.Verify(s.cfg.Verifier, it.Channel)
		fresh = append(fresh, Item{Channel: it.Channel, Message: m, Verdict: v.String(),
			Forged: !s.cfg.Verifier.Accepts(s.cfg.Trust, m.From, v)})
		if err := delivery.MarkSeen(s.cfg.Root, it.Channel, m.Key(), s.owner, s.cfg.Now(), "", "", s.cfg.Signer); err != nil {
			s.cfg.Logger.Warn("cannot mark a message seen", "msg_id", m.ID, "err", err)
		}
	}
	if len(fresh) == 0 {
		return
	}
	s.mu.Lock()
	s.pending = append(s.pending, fresh...)
	close(s.grew)
	s.grew = make(chan struct{})
	s.mu.Unlock()
	s.cfg.Logger.Info("queued for the session", "count", len(fresh))
}

// take returns what is queued, removing it; with wait it waits until
// something is, or ctx ends (then nil).
func (s *Session) take(ctx context.Context, wait bool) Batch {
	for {
		s.mu.Lock()
		b, grew := s.pending, s.grew
		s.pending = nil
		s.mu.Unlock()
		if len(b) > 0 || !wait {
			return b
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return nil
		}
	}
}

// putBack queues b again, ahead of what came since.
func (s *Session) putBack(b Batch) {
	if len(b) == 0 {
		return
	}
	s.mu.Lock()
	s.pending = append(slices.Clone(b), s.pending...)
	close(s.grew)
	s.grew = make(chan struct{})
	s.mu.Unlock()
}

// delivered records b as offered: its marks, and each message
// acknowledged in the inbox (exactly those, not what came meanwhile).
func (s *Session) delivered(b Batch) {
	now := s.cfg.Now()
	files := map[string][]string{}
	s.mu.Lock()
	for _, it := range b {
		s.offered[it.Message.ID] = &offer{item: it}
	}
	s.mu.Unlock()
	for _, it := range b {
		m := it.Message
		if err := delivery.Mark(s.cfg.Root, delivery.KindOffered, it.Channel, m.Key(), s.owner, now, s.cfg.Signer); err != nil {
			s.cfg.Logger.Warn("cannot mark a message offered", "msg_id", m.ID, "err", err)
		}
		files[it.Channel] = append(files[it.Channel], m.File)
	}
	for ch, fs := range files {
		if err := s.inbox.AckFiles(ch, fs); err != nil {
			s.cfg.Logger.Warn("cannot acknowledge the inbox", "channel", ch, "err", err)
		}
	}
	s.cfg.Logger.Info("offered to the session", "count", len(b), "ids", b.IDs())
}

// markRead records the offered message id as read.
func (s *Session) markRead(id string) {
	s.mu.Lock()
	o := s.offered[id]
	if o == nil || o.read {
		s.mu.Unlock()
		return
	}
	o.read = true
	s.mu.Unlock()
	if err := delivery.Mark(s.cfg.Root, delivery.KindRead, o.item.Channel, o.item.Message.Key(), s.owner, s.cfg.Now(), s.cfg.Signer); err != nil {
		s.cfg.Logger.Warn("cannot mark a message read", "msg_id", id, "err", err)
		return
	}
	s.cfg.Logger.Info("read in the session", "msg_id", id)
}

// unread returns the ids offered and not read yet.
func (s *Session) unread() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make(map[string]bool)
	for id, o := range s.offered {
		if !o.read {
			ids[id] = true
		}
	}
	return ids
}

// lookForAnswers records as answered each offered message a message of
// the agent's in its channel replies to: the claim, finished replied with
// that reply, is what collab status reads.
func (s *Session) lookForAnswers() {
	for ch, r := range s.replies {
		msgs, _, err := r.Scan()
		if err != nil {
			continue
		}
		for _, m := range msgs {
			if m.From != s.cfg.Agent || m.Metadata.InReplyTo == "" || m.IsQuestion() {
				continue
			}
			id := m.Metadata.InReplyTo
			s.mu.Lock()
			o := s.offered[id]
			s.mu.Unlock()
			if o == nil {
				continue
			}
			s.markRead(id) // an answer shows it was read
			s.mu.Lock()
			delete(s.offered, id)
			s.mu.Unlock()
			s.answered(ch, o.item.Message.Key(), m.ID)
		}
	}
}

// answered finishes the claim of message id as replied by reply.
func (s *Session) answered(ch, id, reply string) {
	_, outcome, err := s.claims.Acquire(ch, id)
	if err != nil || outcome != claim.Acquired {
		s.cfg.Logger.Warn("cannot record the answer", "msg_id", id, "reply_id", reply, "outcome", outcome, "err", err)
		return
	}
	if err := s.claims.Finish(ch, id, claim.Replied, reply, ""); err != nil {
		s.cfg.Logger.Warn("cannot record the answer", "msg_id", id, "reply_id", reply, "err", err)
		return
	}
	s.cfg.Logger.Info("answered by the session", "msg_id", id, "reply_id", reply)
}

// beat writes the agent's heartbeat in state.
func (s *Session) beat(state string) {
	st := presence.Status{AgentID: s.cfg.Agent, State: state, WatcherPID: os.Getpid(), Channel: s.cfg.Channels[0],
		Host: s.owner.Host, Started: presence.FormatTime(s.started), Instance: s.owner.Instance,
		Joined: &presence.Joined{CLI: s.cli}}
	if state == presence.StateAwake {
		st.Substate = presence.SubLive
	}
	if len(s.cfg.Channels) > 1 {
		st.Channels = s.cfg.Channels
	}
	st.Sign(s.cfg.Signer)
	if err := presence.Write(s.cfg.Root, st); err != nil {
		s.cfg.Logger.Warn("cannot write presence", "err", err)
	}
}

// supersede makes cancel the waiting hook's, ending the one before.
func (s *Session) supersede(cancel context.CancelFunc) {
	s.mu.Lock()
	old := s.waiter
	s.waiter = cancel
	s.mu.Unlock()
	if old != nil {
		old()
	}
}
