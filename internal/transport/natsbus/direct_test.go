package natsbus_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// TestInitStreamAllowsDirect: a stream made without allow_direct (as
// collab nats init made it before) answers no direct get, with an error
// naming the fix; InitStream updates it to allow them, and a new stream
// allows them from the start.
func TestInitStreamAllowsDirect(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool // a stream exists without allow_direct
	}{
		{"new stream", false},
		{"existing stream without allow_direct", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, true, nil)
			ctx := ctxT(t)
			js := jsFor(t, s)
			b, _ := connect(t, natsbus.Options{URL: s.URL()})
			if tc.before {
				if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natsbus.StreamName, Subjects: []string{natsbus.ChatPrefix + ">"}}); err != nil {
					t.Fatal(err)
				}
				_, err := natsbus.DirectBatch(ctx, b.Conn(), natsbus.DirectRequest{Seq: 1, Batch: 1}, nil)
				if !errors.Is(err, nats.ErrNoResponders) {
					t.Fatalf("direct get without allow_direct: %v, want no responders", err)
				}
				_, err = natsbus.DirectInfo(ctx, js)
				if !errors.Is(err, natsbus.ErrNoDirect) || !contains(err.Error(), "collab nats init") {
					t.Fatalf("DirectInfo without allow_direct: %v, want ErrNoDirect naming collab nats init", err)
				}
			}
			created, err := b.InitStream(ctx, natsbus.StreamConfig{})
			if err != nil || created == tc.before {
				t.Fatalf("InitStream: created %v, %v", created, err)
			}
			if _, err := natsbus.DirectInfo(ctx, js); err != nil {
				t.Fatalf("after InitStream: %v", err)
			}
			if _, err := natsbus.DirectBatch(ctx, b.Conn(), natsbus.DirectRequest{Seq: 1, Batch: 1}, nil); err != nil {
				t.Fatalf("direct get after InitStream: %v", err)
			}
		})
	}
}

// TestDirectBatch: a batch returns the messages of one subject in stream
// order from a sequence or a start time, at most Batch of them, and how
// many are left; past the end, none.
func TestDirectBatch(t *testing.T) {
	s := startServer(t, true, nil)
	ctx := ctxT(t)
	root := tree.Root(t.TempDir())
	b, _ := connect(t, natsbus.Options{URL: s.URL()})
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	var room []string // ids in room, in stream order
	for i := range 7 {
		m := post(t, root, "room", "claude", "m")
		if err := b.PublishMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		room = append(room, m.ID)
		if i%2 == 0 {
			if err := b.PublishMessage(ctx, post(t, root, "other", "claude", "x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// seq 1 is room's first; 2 other's; the 7 of room are 1 3 4 6 7 9 10.
	js := jsFor(t, s)
	st, err := js.Stream(ctx, natsbus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	mid := findSeq(t, st, "room", room[3])
	midMsg, err := st.GetMsg(ctx, mid)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		req         natsbus.DirectRequest
		want        []string
		wantPending uint64
	}{
		{"all of room", natsbus.DirectRequest{Seq: 1, Subject: natsbus.ChatSubject("room"), Batch: 100}, room, 0},
		{"three of room", natsbus.DirectRequest{Seq: 1, Subject: natsbus.ChatSubject("room"), Batch: 3}, room[:3], 4},
		{"room from a sequence", natsbus.DirectRequest{Seq: mid, Subject: natsbus.ChatSubject("room"), Batch: 2}, room[3:5], 2},
		{"room from a time", natsbus.DirectRequest{StartTime: midMsg.Time, Subject: natsbus.ChatSubject("room"), Batch: 100}, room[3:], 0},
		{"past the end", natsbus.DirectRequest{Seq: 100, Subject: natsbus.ChatSubject("room"), Batch: 10}, nil, 0},
		{"no such channel", natsbus.DirectRequest{Seq: 1, Subject: natsbus.ChatSubject("none"), Batch: 10}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var last uint64
			pending, err := natsbus.DirectBatch(ctx, b.Conn(), tc.req, func(m *natsbus.StoredMsg) error {
				if m.Seq <= last || m.Subject != natsbus.ChatSubject("room") || m.Time.IsZero() {
					t.Errorf("message %d on %s at %v after %d", m.Seq, m.Subject, m.Time, last)
				}
				last = m.Seq
				got = append(got, m.Header.Get(natsbus.MsgIDHeader))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) || pending != tc.wantPending {
				t.Fatalf("got %v pending %d, want %v pending %d", got, pending, tc.want, tc.wantPending)
			}
		})
	}
	stop := errors.New("stop")
	n := 0
	_, err = natsbus.DirectBatch(ctx, b.Conn(), natsbus.DirectRequest{Seq: 1, Batch: 100}, func(*natsbus.StoredMsg) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("a batch fn ended: %v after %d", err, n)
	}
	if _, err := natsbus.DirectBatch(ctx, b.Conn(), natsbus.DirectRequest{Seq: 1, StartTime: time.Now()}, nil); err == nil {
		t.Fatal("a request with both a sequence and a start time")
	}
}
