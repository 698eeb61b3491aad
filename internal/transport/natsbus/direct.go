package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DirectGetSubject is where the stream answers direct gets: the one
// JetStream API subject a remote agent's user needs to read it
// (deploy/nats/accounts.conf), with $JS.API.STREAM.INFO.CHAT.
const DirectGetSubject = "$JS.API.DIRECT.GET." + StreamName

// DirectMaxBytes bounds the bytes of one DirectBatch answer (the server
// stops after the message that passes it), well under nats.go's pending
// limit of a subscription (64 MiB), so none of it is dropped.
const DirectMaxBytes = 8 << 20

// ErrNoDirect is returned by [DirectInfo] for a stream that does not
// allow direct gets.
var ErrNoDirect = errors.New("natsbus: the stream " + StreamName + " does not allow direct get (allow_direct); run 'collab nats init' on a host of the team to update it")

// DirectInfo returns the stream's info, failing with [ErrNoDirect] when
// it does not allow direct gets (a stream made by collab nats init before
// it set allow_direct).
func DirectInfo(ctx context.Context, js jetstream.JetStream) (*jetstream.StreamInfo, error) {
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, streamError("stream "+StreamName, err)
	}
	info := s.CachedInfo()
	if !info.Config.AllowDirect {
		return nil, ErrNoDirect
	}
	return info, nil
}

// DirectRequest is one batch of a direct get ([DirectBatch]): the
// messages from sequence Seq on, or stored at or after StartTime (set one),
// whose subject matches Subject ("" every one), at most Batch of them.
type DirectRequest struct {
	Seq       uint64
	StartTime time.Time
	Subject   string
	Batch     int
}

// StoredMsg is a message of the stream as a direct get returns it.
type StoredMsg struct {
	Subject string
	Seq     uint64
	Time    time.Time
	Header  nats.Header
	Data    []byte
}

// Headers of a direct get's answers (nats-server's; nats.go exports
// some as jetstream's).
const (
	statusHeader  = "Status"
	descrHeader   = "Description"
	pendingHeader = "Nats-Num-Pending"
)

// directRequest is the server's JSApiMsgGetRequest (nats-server 2.11+
// for batches).
type directRequest struct {
	Seq       uint64     `json:"seq,omitempty"`
	StartTime *time.Time `json:"start_time,omitempty"`
	NextFor   string     `json:"next_by_subj,omitempty"`
	Batch     int        `json:"batch"`
	MaxBytes  int        `json:"max_bytes"`
}

// DirectBatch asks the stream for one batch of messages with a direct
// get ($JS.API.DIRECT.GET.CHAT, which needs allow_direct: see
// [Bus.InitStream]) and calls fn with each, in stream order, until fn
// fails. It returns how many messages matching the request's subject the
// stream holds after the last one of the batch (0 when the batch ended
// the stream, or none matched). Nothing is made on the server: no
// consumer, no state. ctx bounds the whole batch.
//
// No responder (no stream, one not available yet, or one that does not
// allow direct gets: [DirectInfo] tells which) wraps nats.ErrNoResponders;
// a batch that fn ended is fn's error.
func DirectBatch(ctx context.Context, nc *nats.Conn, r DirectRequest, fn func(*StoredMsg) error) (pending uint64, err error) {
	if (r.Seq == 0) == r.StartTime.IsZero() {
		return 0, errors.New("natsbus: direct get: set a sequence or a start time")
	}
	req := directRequest{Seq: r.Seq, NextFor: r.Subject, Batch: max(r.Batch, 1), MaxBytes: DirectMaxBytes}
	if !r.StartTime.IsZero() {
		t := r.StartTime.UTC()
		req.StartTime = &t
	}
	body, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	sub, err := nc.SubscribeSync(nc.NewInbox())
	if err != nil {
		return 0, fmt.Errorf("natsbus: direct get: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(DirectGetSubject, sub.Subject, body); err != nil {
		return 0, fmt.Errorf("natsbus: direct get: %w", err)
	}
	var last uint64
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		switch {
		case err != nil:
			return 0, fmt.Errorf("natsbus: direct get: %w", err)
		}
		if status := msg.Header.Get(statusHeader); status != "" && len(msg.Data) == 0 {
			switch status {
			case "204": // end of the batch
				if ls := msg.Header.Get(jetstream.LastSequenceHeader); ls != "" && ls != strconv.FormatUint(last, 10) {
					return 0, fmt.Errorf("natsbus: direct get: the batch ended at %s, the last message received was %d", ls, last)
				}
				n, err := strconv.ParseUint(msg.Header.Get(pendingHeader), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("natsbus: direct get: end of batch without a pending count: %w", err)
				}
				return n, nil
			case "404": // nothing from there on
				return 0, nil
			case "503":
				return 0, fmt.Errorf("natsbus: direct get: %w", nats.ErrNoResponders)
			}
			return 0, fmt.Errorf("natsbus: direct get: %s %s", status, msg.Header.Get(descrHeader))
		}
		m, err := storedMsg(msg)
		if err != nil {
			return 0, err
		}
		if m.Seq <= last {
			return 0, fmt.Errorf("natsbus: direct get: sequence %d after %d", m.Seq, last)
		}
		last = m.Seq
		if err := fn(m); err != nil {
			return 0, err
		}
	}
}

// storedMsg reads a direct get's answer; a batch's carries its pending
// count (a server before 2.11 answers one message without it).
func storedMsg(msg *nats.Msg) (*StoredMsg, error) {
	h := msg.Header
	if h.Get(jetstream.StreamHeader) != StreamName || h.Get(pendingHeader) == "" {
		return nil, errors.New("natsbus: direct get: not a batch answer of the stream " + StreamName + " (nats-server 2.11 or later is needed)")
	}
	seq, err := strconv.ParseUint(h.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("natsbus: direct get: sequence: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, h.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return nil, fmt.Errorf("natsbus: direct get: time: %w", err)
	}
	subj := h.Get(jetstream.SubjectHeader)
	if subj == "" {
		return nil, errors.New("natsbus: direct get: no subject")
	}
	return &StoredMsg{Subject: subj, Seq: seq, Time: t, Header: h, Data: msg.Data}, nil
}
