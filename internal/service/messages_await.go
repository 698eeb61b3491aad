package service

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// ReplyTrust is how a wait judges replies: the trust policy ("" is
// signing.DefaultPolicy) and the keyring at dir
// (keyring.In(root, dir)), returned as the Trust and Verifier of the
// wait's delegate.Options. Under known and signed, a keyring that
// someone other than its admin could rewrite is refused (Invalid), as
// the watcher refuses it, unless it is empty; under any it is only
// warned about (warn, if set). A missing keyring (a host without the
// mount) is no warning: nothing to verify with.
func ReplyTrust(root tree.Root, trust signing.Policy, dir string, warn func(string)) (delegate.Options, error) {
	if trust == "" {
		trust = signing.DefaultPolicy
	}
	ring := keyring.In(root, dir)
	if err := ring.Check(keyring.Owner(string(root)), true); err != nil {
		if trust != signing.Any && !ring.Empty() {
			return delegate.Options{}, errkind.New(errkind.Invalid, "refusing the keyring %s (--trust %s): %v; as the tree's admin, chown it and chmod go-w its folder and files, or wait with --trust any",
				ring.Dir(), trust, err)
		}
		if !errors.Is(err, iofs.ErrNotExist) && warn != nil {
			warn(err.Error())
		}
	}
	return delegate.Options{Trust: trust, Verifier: signing.NewVerifier(ring).Forgetful()}, nil
}

// NoticeWait is how long AwaitReply's last look through a stream
// (AwaitRequest.Streamed) waits for a guard's notice once every
// addressee is refused.
const NoticeWait = time.Second

// AwaitRequest is one wait for the reply to message ID of Channel, as
// collab send --wait, wait and delegate --wait do it.
type AwaitRequest struct {
	Channel, ID string
	// Timeout bounds the wait; 0: until ctx ends.
	Timeout time.Duration
	// Options are the wait's: From, NotFrom, Poll, and the Trust and
	// Verifier of ReplyTrust. Forged and Skip are AwaitRequest's own.
	Options delegate.Options
	// Wait waits for the reply (a Waiter's Wait, WaitReply, …).
	Wait func(ctx context.Context, opt delegate.Options) (channel.Message, error)
	// Status, if set, tracks the message's delivery status each Poll:
	// each addressee's change of state is told to Changed, and the wait
	// ends (errkind.Conflict) once every addressee is refused, failed or
	// undeliverable. Guard notices are then not replies but
	// Awaited.Notices.
	Status  func(ctx context.Context) (delivery.Status, error)
	Changed func(agent, state string)
	// Forged, if set, is told of each reply the trust policy refused.
	Forged func(m *channel.Message, v signing.Verdict)
	// Streamed: Wait reads a stream (a bridge away), so the last look
	// for notices after a refusal waits NoticeWait for one on its way.
	Streamed bool
}

// Awaited is the reply a wait got, with the verdict on its signature and
// the mark a transcript shows after its sender ("" when it verifies);
// Notices are the guards' notices in reply (with AwaitRequest.Status).
type Awaited struct {
	Message channel.Message
	Verdict signing.Verdict
	Mark    string
	Notices []string
}

// AwaitReply waits for the reply of req. Its errors: a deadline is
// Timeout (wrapping context.DeadlineExceeded), an interrupt Canceled's
// error as is, every addressee refused a Conflict saying why (with the
// notices found in Awaited).
func AwaitReply(ctx context.Context, req AwaitRequest) (Awaited, error) {
	opt := req.Options
	opt.Forged = req.Forged
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	var out Awaited
	var refused <-chan string
	stopTrack := func() {}
	if req.Status != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		opt.Skip = func(m *channel.Message) bool {
			if !delivery.IsNotice(m) {
				return false
			}
			if m.Metadata.InReplyTo == req.ID {
				out.Notices = append(out.Notices, m.Content.Text)
			}
			return true
		}
		refused = trackStatus(ctx, cancel, req, opt.Poll)
		stopTrack = cancel
	}
	m, err := req.Wait(ctx, opt)
	stopTrack()
	if refused != nil {
		if why, ok := <-refused; ok && err != nil {
			lastLook(ctx, req, opt)
			return out, errkind.New(errkind.Conflict, "%s", why)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return out, errkind.Wrap(errkind.Timeout, err)
	}
	if err != nil {
		return out, err
	}
	out.Message = m
	out.Verdict, _ = opt.Judge(&m, req.Channel)
	out.Mark, _ = opt.Verifier.Mark(m.From, out.Verdict)
	return out, nil
}

// lastLook looks once more for the guards' notices once every addressee
// is refused: a watcher posts its notice before it records the refusal.
// On the mount one more scan (ctx is done) finds it; from a stream what
// has landed comes again at once, and NoticeWait is for one on its way.
func lastLook(ctx context.Context, req AwaitRequest, opt delegate.Options) {
	if !req.Streamed {
		req.Wait(ctx, opt)
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), NoticeWait)
	defer cancel()
	opt.Forged = nil // reported already
	req.Wait(lctx, opt)
}

// trackStatus polls req.Status every poll until ctx ends, telling
// req.Changed of each addressee's new state. When every addressee is in
// a final bad state it sends why on the channel returned and cancels the
// wait; the channel is closed when the polling ends.
func trackStatus(ctx context.Context, cancel context.CancelFunc, req AwaitRequest, poll time.Duration) <-chan string {
	out := make(chan string, 1)
	if poll <= 0 {
		poll = delegate.DefaultPoll
	}
	go func() {
		defer close(out)
		tick := time.NewTicker(poll)
		defer tick.Stop()
		last := map[string]string{}
		for {
			st, err := req.Status(ctx)
			if err != nil {
				st = delivery.Status{} // not now (a bridge away): the next poll
			}
			now := time.Now()
			for _, a := range st.Addressees {
				if last[a.Agent] != a.State {
					last[a.Agent] = a.State
					if req.Changed != nil {
						req.Changed(a.Agent, a.Describe(now))
					}
				}
			}
			if st.AllBad() {
				var each []string
				for _, a := range st.Addressees {
					each = append(each, a.Agent+" "+tree.Printable(a.Describe(now)))
				}
				out <- fmt.Sprintf("no answer will come to %s: %s", req.ID, strings.Join(each, "; "))
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// MountStatus is the delivery status of message id of channel ch on the
// mount at root, for AwaitRequest.Status (nil when the message cannot be
// found: nothing to track). v judges the registry entries and heartbeats
// as the wait's trust policy does (nil: every key unknown).
func MountStatus(root tree.Root, ch, id, host string, v *signing.Verifier) func(context.Context) (delivery.Status, error) {
	m, err := channel.Lookup(root, ch, id)
	if err != nil {
		return nil
	}
	opt := delivery.Options{Host: host, Verifier: v}
	return func(context.Context) (delivery.Status, error) { return delivery.For(root, ch, &m, opt), nil }
}

// AskRequest is a post whose sender waits for the reply (collab send
// --wait): Post (AwaitReply is set), then the wait of Await (its
// Channel, ID and NotFrom are the post's; its Wait a Waiter's made
// before the post, so a reply however soon is seen). With Track the
// message's delivery status is tracked (AwaitRequest.Status). Sent, if
// set, is told of the post before the wait.
type AskRequest struct {
	Post  PostRequest
	Await AwaitRequest
	Track bool
	Sent  func(Posted)
}

// Ask posts as a and waits for the reply (see [AskRequest]). An error
// of the post (Posted then has no message, or is Queued) comes before
// any wait; the wait's are AwaitReply's. On the mount, once the reply
// is had, the sender's awaited mark records it (delivery.MarkAwaited),
// signed with a's key: the timeline's reply_seen. Through a bridge there
// is none.
func Ask(ctx context.Context, s Messages, a Actor, req AskRequest) (Posted, Awaited, error) {
	waiter, err := s.ExpectReply(ctx, req.Post.Channel)
	if err != nil {
		return Posted{}, Awaited{}, err
	}
	defer waiter.Close()
	req.Post.AwaitReply = true
	posted, err := s.Post(ctx, a, req.Post)
	if err != nil {
		return posted, Awaited{}, err
	}
	if req.Sent != nil {
		req.Sent(posted)
	}
	m := posted.Message
	w := req.Await
	w.Channel, w.ID, w.Options.NotFrom = m.SessionID, m.ID, m.From
	w.Wait = func(ctx context.Context, opt delegate.Options) (channel.Message, error) {
		return waiter.Wait(ctx, m.ID, opt)
	}
	if req.Track {
		w.Status = func(ctx context.Context) (delivery.Status, error) {
			return s.Status(ctx, StatusRequest{Channel: m.SessionID, ID: m.ID})
		}
	}
	got, err := AwaitReply(ctx, w)
	if r, ok := waiter.(interface {
		replySeen(a Actor, sent, reply *channel.Message)
	}); ok && err == nil {
		r.replySeen(a, &m, &got.Message) // the mount's waiter: the timeline's reply_seen
	}
	return posted, got, err
}
