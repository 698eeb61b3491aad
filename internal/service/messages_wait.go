package service

import (
	"context"
	"os"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// Waiter waits for the reply to a request. It is made (ExpectReply)
// before the request is posted, so a reply that comes at once, or from a
// host whose clock is behind, is found.
type Waiter interface {
	// Wait waits for the reply to message id: the first message whose
	// in_reply_to is id that opt accepts (From, NotFrom, the trust policy
	// and its Verifier, Skip), telling opt.Forged of each reply the
	// policy refused, until ctx ends (its error is returned: a deadline
	// is a Timeout).
	Wait(ctx context.Context, id string, opt delegate.Options) (channel.Message, error)
	// Close releases what the Waiter holds (a NATS subscription).
	Close()
}

// ExpectReply prepares, before a request is posted on ch, the wait for
// its reply. On the mount the channel is polled (opt.Poll) from now on,
// and the files fsnotify sees land in it and the NATS announcements
// (Config.Wake) are read at once (see replyWakes).
func (m *Mount) ExpectReply(ctx context.Context, ch string) (Waiter, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return nil, errkind.Wrap(errkind.Invalid, err)
	}
	w := &mountWaiter{m: m}
	w.wake, w.stop = m.replyWakes(ctx, ch, nil)
	r, err := delegate.Before(m.cfg.Root, ch, delegate.Options{})
	if err != nil {
		w.stop()
		return nil, errkind.Wrap(errkind.Of(err), err)
	}
	w.r = r
	return w, nil
}

type mountWaiter struct {
	m    *Mount
	r    *channel.Reader
	wake <-chan string
	stop func()
}

func (w *mountWaiter) Wait(ctx context.Context, id string, opt delegate.Options) (channel.Message, error) {
	if opt.Wake != nil { // the caller's too
		wctx, cancel := context.WithCancel(ctx)
		both, wg := mergeWakes(wctx, w.wake, opt.Wake)
		defer wg.Wait()
		defer cancel()
		opt.Wake = both
	} else {
		opt.Wake = w.wake
	}
	return delegate.WaitWith(ctx, w.r, id, opt)
}

func (w *mountWaiter) Close() { w.stop() }

// replySeen writes the awaited mark of sent, whose sender a got reply
// (delivery.MarkAwaited: the timeline's reply_seen), once; a failure is
// logged, the reply is the wait's result all the same.
func (w *mountWaiter) replySeen(a Actor, sent, reply *channel.Message) {
	owner := claim.Owner{Agent: sent.From, Host: w.m.cfg.Host, PID: os.Getpid()}
	if err := delivery.MarkAwaited(w.m.cfg.Root, sent.SessionID, sent.ID, reply.ID, owner, time.Now(), a.Signer); err != nil {
		w.m.cfg.Logger.Warn("cannot record the reply as seen", "message", sent.ID, "err", err)
	}
}

// WaitReply waits for the reply to message id of channel ch, posted
// already (it may have come): the first message after it that opt
// accepts, as [Waiter.Wait]. The files fsnotify sees land in the channel,
// the NATS announcements (Config.Wake) and opt.Wake are read at once
// (see replyWakes).
func (m *Mount) WaitReply(ctx context.Context, ch, id string, opt delegate.Options) (channel.Message, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return channel.Message{}, errkind.Wrap(errkind.Invalid, err)
	}
	if _, err := channel.ParseID(id); err != nil {
		return channel.Message{}, errkind.New(errkind.Invalid, "%q is not a message id", id)
	}
	wake, stop := m.replyWakes(ctx, ch, opt.Wake)
	defer stop()
	opt.Wake = wake
	return delegate.Wait(ctx, m.cfg.Root, ch, id, opt)
}
