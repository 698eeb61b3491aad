package natsbus_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

func TestParityFindsMissingOnEitherSide(t *testing.T) {
	s := startServer(t, true, nil)
	root := tree.Root(t.TempDir())
	ctx := ctxT(t)
	b, _ := connect(t, natsbus.Options{URL: s.URL()})
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 5 {
		m := post(t, root, "room", "claude", fmt.Sprintf("m%d", i))
		if err := b.PublishMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	// Another channel's messages are not compared.
	if err := b.PublishMessage(ctx, post(t, root, "other", "claude", "x")); err != nil {
		t.Fatal(err)
	}
	// A file that was never published, and one deleted after it was.
	notPublished := post(t, root, "room", "codex", "file only").ID
	if err := os.Remove(filepath.Join(root.Channel("room"), ids[1]+".json")); err != nil {
		t.Fatal(err)
	}
	// A message deleted from the stream.
	js := jsFor(t, s)
	st, err := js.Stream(ctx, natsbus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	seq := findSeq(t, st, "room", ids[3])
	if err := st.DeleteMsg(ctx, seq); err != nil {
		t.Fatal(err)
	}

	set, err := b.StreamIDs(ctx, "room", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := natsbus.FileIDs(root, "room", set.From)
	if err != nil {
		t.Fatal(err)
	}
	inStream, inFiles := natsbus.Parity(files, set.IDs)
	if want := slices.Sorted(slices.Values([]string{ids[3], notPublished})); !slices.Equal(inStream, want) {
		t.Errorf("missing in the stream: got %v, want %v", inStream, want)
	}
	if want := []string{ids[1]}; !slices.Equal(inFiles, want) {
		t.Errorf("missing in the files: got %v, want %v", inFiles, want)
	}

	// since: messages whose id's time is earlier are left out on both sides.
	future := time.Now().Add(time.Hour)
	set, err = b.StreamIDs(ctx, "room", future)
	if err != nil {
		t.Fatal(err)
	}
	files, err = natsbus.FileIDs(root, "room", set.From)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.IDs) != 0 || len(files) != 0 || !set.From.Equal(future.UTC()) {
		t.Errorf("since an hour ahead: stream %v, files %v, from %v", set.IDs, files, set.From)
	}

	// A channel the stream has never seen, and one with no folder.
	set, err = b.StreamIDs(ctx, "empty", time.Time{})
	if err != nil || len(set.IDs) != 0 {
		t.Errorf("empty channel: %v, %v", set.IDs, err)
	}
	if files, err := natsbus.FileIDs(root, "empty", time.Time{}); err != nil || len(files) != 0 {
		t.Errorf("no folder: %v, %v", files, err)
	}
}

// findSeq returns the stream sequence of the message with id.
func findSeq(t *testing.T, st jetstream.Stream, ch, id string) uint64 {
	t.Helper()
	ctx := ctxT(t)
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err == nil && m.Subject == natsbus.ChatSubject(ch) && m.Header.Get(natsbus.MsgIDHeader) == id {
			return seq
		}
	}
	t.Fatalf("%s is not in the stream", id)
	return 0
}

func TestStreamIDsReportsCopiesOutsideTheWindow(t *testing.T) {
	s := startServer(t, true, nil)
	root := tree.Root(t.TempDir())
	ctx := ctxT(t)
	b, _ := connect(t, natsbus.Options{URL: s.URL()})
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{Duplicates: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	m := post(t, root, "room", "claude", "twice")
	if err := b.PublishMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := b.PublishMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	if n := b.Stats().Duplicates; n != 0 {
		t.Errorf("%d duplicates reported after the window", n)
	}
	set, err := b.StreamIDs(ctx, "room", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.IDs) != 1 || !slices.Equal(set.Duplicates, []string{m.ID}) {
		t.Errorf("ids %v, duplicates %v; want %s stored twice", set.IDs, set.Duplicates, m.ID)
	}
}

func TestStreamIDsManyMessages(t *testing.T) {
	s := startServer(t, true, nil)
	ctx := ctxT(t)
	b, _ := connect(t, natsbus.Options{URL: s.URL()})
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{}{}
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	for i := range 700 { // more than one fetch
		m := &channel.Message{ID: channel.NewID("claude", base.Add(time.Duration(i)*time.Second), "0000"),
			SessionID: "room", From: "claude", Content: channel.Content{Text: "x"}}
		if err := b.PublishMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		if i >= 100 {
			want[m.ID] = struct{}{}
		}
	}
	set, err := b.StreamIDs(ctx, "room", base.Add(100*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.IDs) != len(want) {
		t.Errorf("got %d ids, want %d", len(set.IDs), len(want))
	}
	if a, b := natsbus.Parity(want, set.IDs); len(a)+len(b) != 0 {
		t.Errorf("differences: %v, %v", a, b)
	}
}

func TestStreamIDsWithoutStream(t *testing.T) {
	s := startServer(t, true, nil)
	b, _ := connect(t, natsbus.Options{URL: s.URL()})
	if _, err := b.StreamIDs(ctxT(t), "room", time.Time{}); err == nil {
		t.Error("StreamIDs without a stream succeeded")
	}
	if _, err := b.InitStream(ctxT(t), natsbus.StreamConfig{MaxAge: time.Minute, Duplicates: time.Hour}); err == nil {
		t.Error("a duplicate window longer than the maximum age was accepted")
	}
	core := startServer(t, false, nil)
	c, _ := connect(t, natsbus.Options{URL: core.URL()})
	if _, err := c.InitStream(ctxT(t), natsbus.StreamConfig{}); !errors.Is(err, natsbus.ErrNoJetStream) {
		t.Errorf("InitStream on a server without JetStream: got %v, want ErrNoJetStream", err)
	} else {
		t.Logf("error: %v", err)
	}
}

func TestParity(t *testing.T) {
	set := func(ids ...string) map[string]struct{} {
		m := map[string]struct{}{}
		for _, id := range ids {
			m[id] = struct{}{}
		}
		return m
	}
	tests := []struct {
		name              string
		files, stream     map[string]struct{}
		inStream, inFiles []string
	}{
		{"both empty", set(), set(), nil, nil},
		{"same", set("a", "b"), set("b", "a"), nil, nil},
		{"stream behind", set("a", "b", "c"), set("b"), []string{"a", "c"}, nil},
		{"files behind", set("b"), set("c", "b", "a"), nil, []string{"a", "c"}},
		{"both", set("a", "b"), set("b", "c"), []string{"a"}, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotS, gotF := natsbus.Parity(tt.files, tt.stream)
			if !slices.Equal(gotS, tt.inStream) || !slices.Equal(gotF, tt.inFiles) {
				t.Errorf("got %v, %v; want %v, %v", gotS, gotF, tt.inStream, tt.inFiles)
			}
		})
	}
}

func ExampleParity() {
	files := map[string]struct{}{"msg-20260111-163315-claude-4c78": {}, "msg-20260111-163320-codex-0a1b": {}}
	stream := map[string]struct{}{"msg-20260111-163315-claude-4c78": {}, "msg-20260111-163400-gemini-ffff": {}}
	missingInStream, missingInFiles := natsbus.Parity(files, stream)
	fmt.Println("not in the stream:", missingInStream)
	fmt.Println("not in the files:", missingInFiles)
	// Output:
	// not in the stream: [msg-20260111-163320-codex-0a1b]
	// not in the files: [msg-20260111-163400-gemini-ffff]
}
