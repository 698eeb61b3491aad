package delivery

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// timelineTree is a tree where alice asked bob a question and bob's
// watcher went through the steps its fields say, each 100ms after the
// one before, from base.
type timelineTree struct {
	root       tree.Root
	m          channel.Message
	base       time.Time
	alice, bob *signing.Signer
	v          *signing.Verifier
}

func newTimelineTree(t testing.TB) *timelineTree {
	t.Helper()
	x := &timelineTree{root: tree.Root(t.TempDir())}
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	for _, who := range []string{"alice", "bob"} {
		key, err := signing.NewKey(filepath.Join(t.TempDir(), who+".key"), who, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := ring.Trust(who, key.PublicKey()); err != nil {
			t.Fatal(err)
		}
		if who == "alice" {
			x.alice = key
		} else {
			x.bob = key
		}
	}
	x.v = signing.NewVerifier(ring)
	x.base = time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
	x.m = channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "how long?"}, Metadata: channel.Metadata{Host: "laptop"}}
	x.post(t, &x.m, x.alice, 0)
	return x
}

// at is base plus n steps of 100ms.
func (x *timelineTree) at(n int) time.Time {
	return x.base.Add(time.Duration(n) * 100 * time.Millisecond)
}

func (x *timelineTree) post(t testing.TB, m *channel.Message, key *signing.Signer, step int) {
	t.Helper()
	w := channel.Writer{Root: x.root, Signer: key, Now: func() time.Time { return x.at(step) }}
	if err := w.Post(m); err != nil {
		t.Fatal(err)
	}
}

var bobOwner = claim.Owner{Agent: "bob", Host: "vm-1", PID: 42, Instance: "i1"}

func (x *timelineTree) seen(t testing.TB, key *signing.Signer, via string) {
	t.Helper()
	if err := MarkSeenWoken(claim.Files{Root: x.root}, "dev", x.m.ID, bobOwner, x.at(2), Woken{At: x.at(1), Via: via}, "", "", key); err != nil {
		t.Fatal(err)
	}
}

// answer claims, runs (with a question) and answers the message; it
// returns the reply.
func (x *timelineTree) answer(t testing.TB) channel.Message {
	t.Helper()
	store := &claim.Store{Root: x.root, Self: bobOwner, Signer: x.bob, Now: func() time.Time { return x.at(3) }}
	if _, _, err := store.Acquire("dev", x.m.ID); err != nil {
		t.Fatal(err)
	}
	rec, err := jobs.Start(x.root, jobs.Job{ID: jobs.NewID(), Agent: "bob", Host: "vm-1", Channel: "dev", Message: x.m.ID, From: "alice", Started: x.at(4)},
		func() time.Time { return x.at(9) })
	if err != nil {
		t.Fatal(err)
	}
	rec.Event(modelcli.Event{Time: x.at(5), Kind: modelcli.EventStarted})
	rec.Event(modelcli.Event{Time: x.at(6), Kind: modelcli.EventProgress, Text: "[codex] reconnecting"}) // the CLI's, not output
	rec.Event(modelcli.Event{Time: x.at(7), Kind: modelcli.EventProgress, Text: "Looking."})
	rec.Event(modelcli.Event{Time: x.at(8), Kind: modelcli.EventNeedsInput, Text: "may I run ls?"})
	reply := channel.Message{SessionID: "dev", From: "bob", To: "alice", Content: channel.Content{Text: "two days"}, Metadata: channel.Metadata{InReplyTo: x.m.ID, Host: "vm-1"}}
	x.post(t, &reply, x.bob, 10)
	rec.Finish(jobs.Completed, modelcli.Response{Text: "two days"}, nil)
	if err := store.Finish("dev", x.m.ID, claim.Replied, reply.ID, ""); err != nil {
		t.Fatal(err)
	}
	return reply
}

func (x *timelineTree) awaited(t testing.TB, reply string, key *signing.Signer) {
	t.Helper()
	if err := MarkAwaited(x.root, "dev", x.m.ID, reply, claim.Owner{Agent: "alice", Host: "laptop", PID: 7}, x.at(11), key); err != nil {
		t.Fatal(err)
	}
}

func stageNames(tl Timeline) []string {
	var out []string
	for _, s := range tl.Stages {
		out = append(out, s.Name)
	}
	return out
}

func TestTimelineFor(t *testing.T) {
	all := []string{StageSent, StageVisible, StageSeen, StageClaimed, StageRunStarted, StageFirstOutput, StageAwaitingInput, StageReplied, StageReplySeen, StageReported}
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, x *timelineTree)
		want  []string
	}{
		{"sent only", func(*testing.T, *timelineTree) {}, []string{StageSent}},
		{"every stage", func(t *testing.T, x *timelineTree) {
			x.seen(t, x.bob, ViaFsnotify)
			r := x.answer(t)
			x.awaited(t, r.ID, x.alice)
			rp := &Reporter{Root: x.root, Agent: "bob", Host: "vm-2", Signer: x.bob, Now: func() time.Time { return x.at(12) }}
			if _, err := rp.Send(&x.m, Report{Agent: "bob", State: Failed, Reason: "the CLI exited 1"}); err != nil {
				t.Fatal(err)
			}
		}, all},
		{"seen, not claimed", func(t *testing.T, x *timelineTree) { x.seen(t, x.bob, ViaPoll) }, []string{StageSent, StageVisible, StageSeen}},
		{"seen file of an older version: no visible", func(t *testing.T, x *timelineTree) {
			if err := MarkSeen(x.root, "dev", x.m.ID, bobOwner, x.at(2), "", "", x.bob); err != nil {
				t.Fatal(err)
			}
		}, []string{StageSent, StageSeen}},
		{"forged seen file ignored", func(t *testing.T, x *timelineTree) { x.seen(t, nil, ViaNATS) }, []string{StageSent}},
		{"seen file signed by another agent ignored", func(t *testing.T, x *timelineTree) { x.seen(t, x.alice, ViaNATS) }, []string{StageSent}},
		{"no awaited mark", func(t *testing.T, x *timelineTree) {
			x.seen(t, x.bob, ViaPoll)
			x.answer(t)
		}, all[:8]},
		{"forged awaited mark ignored", func(t *testing.T, x *timelineTree) {
			x.seen(t, x.bob, ViaPoll)
			r := x.answer(t)
			x.awaited(t, r.ID, x.bob)
		}, all[:8]},
		{"report mark signed by another agent ignored", func(t *testing.T, x *timelineTree) {
			x.seen(t, x.bob, ViaPoll)
			x.answer(t)
			rp := &Reporter{Root: x.root, Agent: "bob", Host: "vm-2", Signer: x.alice, Now: func() time.Time { return x.at(12) },
				Post: func(*channel.Message) error { return nil }} // only the mark matters here
			if _, err := rp.Send(&x.m, Report{Agent: "bob", State: Failed, Reason: "forged"}); err != nil {
				t.Fatal(err)
			}
		}, all[:8]},
		{"awaited mark of another reply ignored", func(t *testing.T, x *timelineTree) {
			x.seen(t, x.bob, ViaPoll)
			x.answer(t)
			x.awaited(t, x.m.ID, x.alice)
		}, all[:8]},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newTimelineTree(t)
			c.setup(t, x)
			tl := TimelineFor(x.root, "dev", &x.m, "bob", Options{Verifier: x.v})
			if got := stageNames(tl); !slices.Equal(got, c.want) {
				t.Fatalf("stages %v, want %v", got, c.want)
			}
			for i, s := range tl.Stages {
				if i > 0 && s.Time.Before(tl.Stages[i-1].Time) {
					t.Errorf("stage %s before %s", s.Name, tl.Stages[i-1].Name)
				}
			}
			if len(tl.Stages) == len(all) {
				checkEveryStage(t, x, tl)
			}
		})
	}
}

func checkEveryStage(t *testing.T, x *timelineTree, tl Timeline) {
	t.Helper()
	for i, step := range []int{0, 1, 2, 3, 4, 7, 8, 10, 11, 12} { // the CLI's notice at 6 is no output
		if s := tl.Stages[i]; !s.Time.Equal(x.at(step)) {
			t.Errorf("%s at %v, want %v", s.Name, s.Time, x.at(step))
		}
	}
	v := tl.Stages[1]
	if v.Via != ViaFsnotify || v.Host != "vm-1" || !v.Time.Equal(x.at(1)) {
		t.Errorf("visible %+v, want via fsnotify on vm-1 at %v", v, x.at(1))
	}
	if rs := tl.Stages[8]; rs.Via != "alice" || rs.Host != "laptop" || !rs.Time.Equal(x.at(11)) {
		t.Errorf("reply_seen %+v", rs)
	}
	if r := tl.Stages[7]; r.Host != "vm-1" || r.Note == "" {
		t.Errorf("replied %+v", r)
	}
	if d := tl.Span(); d != 1200*time.Millisecond {
		t.Errorf("span %v", d)
	}
	nine := Timeline{Agent: tl.Agent, Stages: tl.Stages[:9]}
	data, _ := json.Marshal(nine)
	t.Logf("a timeline of 9 stages is %d bytes of JSON", len(data))
}

// TestTimelineForZeroOptions: a timeline asked without options (the
// tracing code's call) does not need Now or Alive.
func TestTimelineForZeroOptions(t *testing.T) {
	x := newTimelineTree(t)
	x.seen(t, x.bob, ViaPoll)
	if got := stageNames(TimelineFor(x.root, "dev", &x.m, "bob", Options{})); !slices.Equal(got, []string{StageSent, StageVisible, StageSeen}) {
		t.Errorf("stages %v", got)
	}
}

// TestSeenWokenSignature: the visible time and via are covered by the
// seen file's signature when set; a file without them verifies as one of
// an older version does; changing, adding or dropping them breaks it.
func TestSeenWokenSignature(t *testing.T) {
	x := newTimelineTree(t)
	x.seen(t, x.bob, ViaFsnotify)
	s, err := ReadSeen(x.root, "dev", "bob", x.m.ID)
	if err != nil || s.Via != ViaFsnotify || !s.Visible.Equal(x.at(1)) {
		t.Fatalf("seen %+v, %v", s, err)
	}
	if v := s.Verify(x.v, "dev", "bob", x.m.ID); v != signing.Verified {
		t.Fatalf("verdict %v", v)
	}
	for name, edit := range map[string]func(*SeenFile){
		"via changed":     func(s *SeenFile) { s.Via = ViaPoll },
		"visible changed": func(s *SeenFile) { s.Visible = s.Visible.Add(time.Second) },
		"both dropped":    func(s *SeenFile) { s.Via, s.Visible = "", time.Time{} },
	} {
		c := s
		edit(&c)
		if v := c.Verify(x.v, "dev", "bob", x.m.ID); v == signing.Verified {
			t.Errorf("%s: still verifies", name)
		}
	}
	old := SeenFile{Message: x.m.ID, Channel: "dev", Agent: "bob", Host: "vm-1", PID: 42, Instance: "i1", Time: x.at(2)}
	old.Signature = x.bob.Sign(signing.Payload(KindSeen, "dev", "bob", x.m.ID, "vm-1", "42", "i1", x.at(2).Format(time.RFC3339Nano), "", ""))
	if v := old.Verify(x.v, "dev", "bob", x.m.ID); v != signing.Verified {
		t.Errorf("a seen file of an older version: %v, want verified", v)
	}
	added := old
	added.Via = ViaNATS
	if v := added.Verify(x.v, "dev", "bob", x.m.ID); v == signing.Verified {
		t.Error("an older seen file with a via added still verifies")
	}
}

// TestMarkAwaitedOnce: the first mark stays; a bad name is refused.
func TestMarkAwaitedOnce(t *testing.T) {
	x := newTimelineTree(t)
	x.awaited(t, "r1", x.alice)
	if err := MarkAwaited(x.root, "dev", x.m.ID, "r2", claim.Owner{Agent: "alice"}, x.at(20), x.alice); err != nil {
		t.Fatalf("a second mark: %v", err)
	}
	a, err := ReadAwaited(x.root, "dev", "alice", x.m.ID)
	if err != nil || a.Reply != "r1" || a.Verify(x.v, "dev", "alice", x.m.ID) != signing.Verified {
		t.Fatalf("mark %+v, %v; want the first, verified", a, err)
	}
	if err := MarkAwaited(x.root, "dev", "../x", "r1", claim.Owner{Agent: "alice"}, x.at(20), nil); err == nil {
		t.Error("a bad message id: want an error")
	}
	path := filepath.Join(x.root.AgentClaims("dev", "alice"), x.m.ID+".awaited")
	if err := os.WriteFile(path, []byte(`{"message":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAwaited(x.root, "dev", "alice", x.m.ID); err == nil {
		t.Error("a mark without its names: want an error")
	}
}

func FuzzParseAwaited(f *testing.F) {
	f.Add([]byte(`{"message":"20261127T235959.000000000Z-a","channel":"dev","agent":"alice","reply":"r1","host":"h","pid":1,"time":"2026-11-27T23:59:59Z"}`))
	f.Add([]byte(`{"message":"../x","channel":"dev","agent":"alice","reply":"r1","time":"2026-11-27T23:59:59Z"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ParseAwaited(raw)
		if err != nil {
			return
		}
		for _, n := range []string{a.Channel, a.Agent, a.Message, a.Reply} {
			if tree.CheckName("name", n) != nil {
				t.Fatalf("accepted a bad name %q", n)
			}
		}
		if a.Time.IsZero() {
			t.Fatal("accepted no time")
		}
	})
}

func TestTimelineTable(t *testing.T) {
	at := time.Date(2026, 11, 28, 0, 1, 2, 566_000_000, time.UTC)
	tl := &Timeline{Agent: "codex", Stages: []Stage{
		{Name: StageSent, Time: at, Host: "laptop"},
		{Name: StageVisible, Time: at.Add(3 * time.Millisecond), Via: ViaFsnotify, Host: "vm 1"},
		{Name: StageReplied, Time: at.Add(90 * time.Second), Host: "vm 1"},
	}}
	st := Status{Addressees: []Addressee{{Agent: "codex", Timeline: tl}, {Agent: "far"}}}
	var got []string
	for _, r := range st.TimelineTable() {
		got = append(got, strings.Join(r, " "))
	}
	want := []string{
		"AGENT STAGE TIME GAP TOTAL VIA HOST",
		"codex sent 00:01:02.566 - 0s - laptop",
		`codex visible 00:01:02.569 +3ms 3ms fsnotify vm\x201`,
		`codex replied 00:02:32.566 +1m30s 1m30s - vm\x201`,
		"far - - - - - -",
	}
	if !slices.Equal(got, want) {
		t.Errorf("table\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// BenchmarkTimelineFor: the cost of one timeline with every stage.
func BenchmarkTimelineFor(b *testing.B) {
	x := newTimelineTree(b)
	x.seen(b, x.bob, ViaFsnotify)
	r := x.answer(b)
	x.awaited(b, r.ID, x.alice)
	opt := Options{Verifier: x.v}
	for b.Loop() {
		TimelineFor(x.root, "dev", &x.m, "bob", opt)
	}
}

// TestForgedReportMark: a report mark signed by another than its decider
// neither names a report nor makes the message expired, with a
// verifier; without one it is taken as written.
func TestForgedReportMark(t *testing.T) {
	x := newTimelineTree(t)
	bob := registry.Agent{ID: "bob", Role: "reviewer", Host: "vm-2", Registered: x.at(0).Format(time.RFC3339Nano)}
	if err := bob.Sign(x.bob); err != nil {
		t.Fatal(err)
	}
	if err := registry.Write(x.root, bob); err != nil {
		t.Fatal(err)
	}
	rp := &Reporter{Root: x.root, Agent: "bob", Host: "vm-2", Signer: x.alice, Post: func(*channel.Message) error { return nil }}
	if _, err := rp.Send(&x.m, Report{Agent: "bob", State: Expired, Reason: "forged"}); err != nil {
		t.Fatal(err)
	}
	if a := For(x.root, "dev", &x.m, Options{Verifier: x.v}).Addressees[0]; a.State != Waiting || a.Report != "" {
		t.Errorf("with a verifier: %+v, want waiting without a report", a)
	}
	if a := For(x.root, "dev", &x.m, Options{}).Addressees[0]; a.State != Expired || a.Report == "" {
		t.Errorf("without a verifier: %+v, want expired with its report", a)
	}
}
