package remote

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"collab/internal/transport/natsbus"
)

// ConsumerSlots is how many consumers of the stream a remote agent holds
// at most: its user in deploy/nats/accounts.conf may create, read and
// delete the consumers named ConsumerName(agent, 1..ConsumerSlots) and
// no other (a mirror and each read --follow hold one each).
const ConsumerSlots = 4

// consumerIdle is how long the server keeps a consumer nobody fetches
// from: the slot of a process that died is free again after it.
const consumerIdle = time.Minute

// ConsumerName is the name of a remote agent's i-th consumer of the
// stream, agent "-c" i: a whole subject token, as NATS permissions name
// it (they cannot match a prefix of a token), and no other agent's
// (agent names have no '.', and the suffix is one digit).
func ConsumerName(agent string, i int) string { return agent + "-c" + strconv.Itoa(i) }

// errOutOfOrder: a message of the consumer was lost on the way; the
// reader makes its consumer again from the last one it handed out.
var errOutOfOrder = errors.New("a stream message was lost on the way")

// streamReader reads the stream in order through one consumer under a
// name of its agent's (what nats.go's ordered consumer does, under names
// the permissions can list: its names are random). The consumer is
// ephemeral, without acks, in memory, and removed by the server after
// consumerIdle unused. A reader is used by one goroutine.
type streamReader struct {
	js    jetstream.JetStream
	agent string
	// desc makes this reader's consumer configuration its own: a create
	// under a name another reader holds fails instead of sharing it.
	desc string

	name      string             // the name held, "" none
	cons      jetstream.Consumer // nil: made again by the next open
	delivered uint64             // the consumer sequence last handed out
}

func newStreamReader(js jetstream.JetStream, agent, purpose string) *streamReader {
	return &streamReader{js: js, agent: agent, desc: "collab " + purpose + " " + rand.Text()}
}

// ready reports whether the reader has a consumer to fetch from.
func (r *streamReader) ready() bool { return r.cons != nil }

// open makes the reader's consumer with cfg (its filter and start; the
// rest is the reader's), deleting the one it had: under the name it held
// if that is free, else the first free name of the agent's.
func (r *streamReader) open(ctx context.Context, cfg jetstream.ConsumerConfig) error {
	r.deleteHeld(ctx)
	cfg.Durable, cfg.DeliverSubject = "", ""
	cfg.AckPolicy = jetstream.AckNonePolicy
	cfg.MemoryStorage, cfg.Replicas = true, 1
	cfg.InactiveThreshold = consumerIdle
	cfg.Description = r.desc
	if len(cfg.FilterSubjects) == 1 {
		// As nats.go's ordered consumer does: the server keeps one filter
		// as filter_subject, which nats.go would take for a server that
		// ignores filter_subjects.
		cfg.FilterSubject, cfg.FilterSubjects = cfg.FilterSubjects[0], nil
	}
	names := make([]string, 0, ConsumerSlots+1)
	if r.name != "" {
		names = append(names, r.name)
	}
	for i := 1; i <= ConsumerSlots; i++ {
		if n := ConsumerName(r.agent, i); n != r.name {
			names = append(names, n)
		}
	}
	for _, name := range names {
		cfg.Name = name
		c, err := r.js.CreateConsumer(ctx, natsbus.StreamName, cfg)
		if nameTaken(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("consumer %s: %w", name, err)
		}
		r.name, r.cons, r.delivered = name, c, 0
		return nil
	}
	r.name = ""
	return fmt.Errorf("all %d stream consumers of %s are in use (%s to %s; one is freed %v after its process stops)",
		ConsumerSlots, r.agent, ConsumerName(r.agent, 1), ConsumerName(r.agent, ConsumerSlots), consumerIdle)
}

// nameTaken reports a create refused because another consumer has the
// name.
func nameTaken(err error) bool {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode {
	case jetstream.JSErrCodeConsumerExists, jetstream.JSErrCodeConsumerAlreadyExists, jetstream.JSErrCodeConsumerNameExists:
		return true
	}
	return false
}

// fetch calls fn with each message of the next batch (at most n, the
// batch ending after wait or when ctx ends), in stream order. A message lost on the way
// ends it with errOutOfOrder; any failure drops the consumer, made again
// by the next open.
func (r *streamReader) fetch(ctx context.Context, n int, wait time.Duration, fn func(jetstream.Msg, *jetstream.MsgMetadata) error) error {
	if r.cons == nil {
		return errors.New("no consumer")
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	batch, err := r.cons.Fetch(n, jetstream.FetchContext(ctx))
	if err != nil {
		r.cons = nil
		return err
	}
	for msg := range batch.Messages() {
		meta, err := msg.Metadata()
		if err != nil {
			continue // not a stream message
		}
		if meta.Sequence.Consumer != r.delivered+1 {
			r.cons = nil
			return errOutOfOrder
		}
		r.delivered = meta.Sequence.Consumer
		if err := fn(msg, meta); err != nil {
			return err
		}
	}
	err = batch.Error()
	if err == nil || errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	r.cons = nil
	return err
}

// info is the consumer's state on the server.
func (r *streamReader) info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	if r.cons == nil {
		return nil, errors.New("no consumer")
	}
	return r.cons.Info(ctx)
}

// drop forgets the consumer: the next open deletes it and makes another.
func (r *streamReader) drop() { r.cons = nil }

// close deletes the consumer held, within a few seconds.
func (r *streamReader) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.deleteHeld(ctx)
	r.name = ""
}

// deleteHeld deletes the consumer under the name held (gone already is
// fine: the server removed it, or it restarted).
func (r *streamReader) deleteHeld(ctx context.Context) {
	r.cons = nil
	if r.name != "" {
		_ = r.js.DeleteConsumer(ctx, natsbus.StreamName, r.name)
	}
}
