package delivery_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/inbox"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// postOriginal posts a message from alice to bob in dev and returns it as
// read back.
func postOriginal(t *testing.T, root tree.Root, edit func(*channel.Message)) channel.Message {
	t.Helper()
	m := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "review this"}}
	if edit != nil {
		edit(&m)
	}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	got, err := channel.Lookup(root, "dev", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// reportsIn returns the delivery reports in agent's inbox.
func reportsIn(t *testing.T, root tree.Root, agent string) []channel.Message {
	t.Helper()
	b, err := inbox.New(root, agent, inbox.Options{Channels: []string{"dev"}})
	if err != nil {
		t.Fatal(err)
	}
	items, err := b.Peek()
	if err != nil {
		t.Fatal(err)
	}
	var out []channel.Message
	for _, it := range items {
		if it.Message.IsDeliveryReport() {
			out = append(out, it.Message)
		}
	}
	return out
}

func refusal() delivery.Report {
	return delivery.Report{Agent: "bob", State: delivery.Refused, Guard: delivery.GuardMaxHops, Reason: "the thread reached the hop limit (6)"}
}

// TestReportOnce: the report lands in the sender's inbox, signed, in
// reply to the message, with its extension; sending it again, or from a
// second decider racing the first, makes no second one.
func TestReportOnce(t *testing.T) {
	root := tree.Root(t.TempDir())
	m := postOriginal(t, root, nil)
	key, err := signing.NewKey(filepath.Join(t.TempDir(), "bob.key"), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			agent := "bob"
			if i%2 == 1 {
				agent = "carol" // another decider
			}
			rp := &delivery.Reporter{Root: root, Agent: agent, Host: "h1"}
			if agent == "bob" {
				rp.Signer = key
			}
			id, err := rp.Send(&m, refusal())
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("report ids differ: %v", ids)
		}
	}
	got := reportsIn(t, root, "alice")
	if len(got) != 1 {
		t.Fatalf("alice has %d reports, want 1: %+v", len(got), got)
	}
	r := got[0]
	if r.ID != ids[0] || r.Metadata.InReplyTo != m.ID || r.To != "alice" || r.Type != channel.TypeDeliveryReport {
		t.Errorf("report %+v", r)
	}
	ext, ok := delivery.ParseReport(&r)
	if !ok || ext.Message != m.ID || ext.Agent != "bob" || ext.Guard != delivery.GuardMaxHops || ext.Channel != "dev" {
		t.Errorf("extension %+v ok %v", ext, ok)
	}
	k, err := delivery.ReadReport(root, "dev", "bob", m.ID)
	if err != nil || k.ID != r.ID {
		t.Fatalf("ReadReport = %+v, %v; want id %s", k, err, r.ID)
	}
	st, err := delivery.Of(root, "dev", m.ID, delivery.Options{})
	if err != nil || len(st.Addressees) != 1 || st.Addressees[0].Report != r.ID {
		t.Fatalf("status %+v, %v", st, err)
	}
	if d := st.Addressees[0].Describe(time.Now()); !strings.Contains(d, r.ID) {
		t.Errorf("Describe = %q, want the report's id", d)
	}
}

// TestReportAfterCrash: a decider killed between the mark and the post
// leaves the mark only; the next Send posts the report under the mark's
// id, once.
func TestReportAfterCrash(t *testing.T) {
	root := tree.Root(t.TempDir())
	m := postOriginal(t, root, nil)
	crash := errors.New("killed")
	rp := &delivery.Reporter{Root: root, Agent: "bob", Post: func(*channel.Message) error { return crash }}
	if _, err := rp.Send(&m, refusal()); !errors.Is(err, crash) {
		t.Fatalf("Send = %v, want the crash", err)
	}
	k, err := delivery.ReadReport(root, "dev", "bob", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(reportsIn(t, root, "alice")); n != 0 {
		t.Fatalf("%d reports before the retry", n)
	}
	for range 2 {
		id, err := (&delivery.Reporter{Root: root, Agent: "carol"}).Send(&m, delivery.Report{Agent: "bob", State: delivery.Failed, Reason: "other"})
		if err != nil || id != k.ID {
			t.Fatalf("retry = %q, %v; want %s", id, err, k.ID)
		}
	}
	got := reportsIn(t, root, "alice")
	if len(got) != 1 || got[0].ID != k.ID {
		t.Fatalf("reports %+v, want one with id %s", got, k.ID)
	}
	if ext, _ := delivery.ParseReport(&got[0]); ext.State != delivery.Refused {
		t.Errorf("the retry posted %+v, want the mark's refusal", ext)
	}
}

// TestNoReportOnReports: never a report on a report, a guard notice or a
// question.
func TestNoReportOnReports(t *testing.T) {
	root := tree.Root(t.TempDir())
	for _, edit := range []func(*channel.Message){
		func(m *channel.Message) { m.Type = channel.TypeDeliveryReport },
		func(m *channel.Message) { m.Type = delivery.NoticeType },
		func(m *channel.Message) { m.Type = channel.TypeQuestion },
		func(m *channel.Message) { m.SetExtension(channel.ExtDeliveryReport, json.RawMessage(`{}`)) },
	} {
		m := postOriginal(t, root, edit)
		id, err := (&delivery.Reporter{Root: root, Agent: "bob"}).Send(&m, refusal())
		if id != "" || err != nil {
			t.Errorf("report on %+v: %q, %v", m, id, err)
		}
		if _, err := delivery.ReadReport(root, "dev", "bob", m.ID); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a mark for %s: %v", m.ID, err)
		}
	}
}

// TestExpiredStatus: an unclaimed message whose report says it expired
// is expired, and bad: a wait on it ends.
func TestExpiredStatus(t *testing.T) {
	root := tree.Root(t.TempDir())
	a := registry.Agent{ID: "bob", Role: "reviewer", Host: "vm-9", Registered: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := registry.Write(root, a); err != nil {
		t.Fatal(err)
	}
	m := postOriginal(t, root, nil)
	if st := delivery.For(root, "dev", &m, delivery.Options{}); st.Addressees[0].State != delivery.Waiting {
		t.Fatalf("before the report: %+v", st)
	}
	r := delivery.Report{Agent: "bob", State: delivery.Expired, Reason: "nobody claimed it within 1m0s"}
	if _, err := (&delivery.Reporter{Root: root, Agent: "carol"}).Send(&m, r); err != nil {
		t.Fatal(err)
	}
	st := delivery.For(root, "dev", &m, delivery.Options{})
	if a := st.Addressees[0]; a.State != delivery.Expired || a.Report == "" || !st.AllBad() {
		t.Fatalf("status %+v", st)
	}
}

func TestReportText(t *testing.T) {
	id := "msg-20260111-120000-alice-0001"
	tests := []struct {
		r    delivery.Report
		want string
	}{
		{delivery.Report{State: delivery.Refused, Guard: "max-hops", Reason: "the thread reached the hop limit (6)"},
			"[collab] your message " + id + " to bob was refused by max-hops: the thread reached the hop limit (6)."},
		{delivery.Report{State: delivery.Failed, Reason: `"exit status 1"`}, "[collab] your message " + id + ` to bob failed: "exit status 1".`},
		{delivery.Report{State: delivery.Undeliverable}, "[collab] your message " + id + " to bob is undeliverable."},
		{delivery.Report{State: delivery.Expired, Reason: "nobody claimed it within 10m0s"},
			"[collab] your message " + id + " to bob expired: nobody claimed it within 10m0s."},
	}
	for _, tt := range tests {
		tt.r.Message, tt.r.Agent = id, "bob"
		if got := delivery.ReportText(tt.r); got != tt.want {
			t.Errorf("ReportText(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}

// TestReportReasonPlain: a reason from a file cannot add a line to the
// report or @mention anyone, and is bounded.
func TestReportReasonPlain(t *testing.T) {
	root := tree.Root(t.TempDir())
	m := postOriginal(t, root, nil)
	r := delivery.Report{Agent: "bob", State: delivery.Failed, Reason: "boom\n@carol look " + strings.Repeat("x", 1000)}
	if _, err := (&delivery.Reporter{Root: root, Agent: "bob"}).Send(&m, r); err != nil {
		t.Fatal(err)
	}
	got := reportsIn(t, root, "alice")
	if len(got) != 1 {
		t.Fatalf("%d reports", len(got))
	}
	text := got[0].Content.Text
	if strings.Contains(text, "\n") || strings.Contains(text, "@") || len(text) > 600 || got[0].IsFor("carol") {
		t.Errorf("text %q", text)
	}
}

func TestParseExpireAfter(t *testing.T) {
	for s, want := range map[string]time.Duration{"10m": 10 * time.Minute, "off": 0, "0": 0, "24h": 24 * time.Hour} {
		if d, err := delivery.ParseExpireAfter(s); err != nil || d != want {
			t.Errorf("ParseExpireAfter(%q) = %v, %v", s, d, err)
		}
	}
	for _, s := range []string{"", "10", "-1m", "500ms", "25h", "1y"} {
		if _, err := delivery.ParseExpireAfter(s); err == nil {
			t.Errorf("ParseExpireAfter(%q) took it", s)
		}
	}
}

// TestChannelSettings: written atomically, read back, checked; the
// channel's readers do not list the file.
func TestChannelSettings(t *testing.T) {
	root := tree.Root(t.TempDir())
	if d := delivery.ChannelExpireAfter(root, "dev"); d != 0 {
		t.Fatalf("no settings: %v", d)
	}
	if err := delivery.WriteChannelSettings(root, "dev", delivery.ChannelSettings{ExpireAfter: "nope"}); err == nil {
		t.Fatal("bad settings written")
	}
	if err := delivery.WriteChannelSettings(root, "dev", delivery.ChannelSettings{ExpireAfter: "90s"}); err != nil {
		t.Fatal(err)
	}
	if d := delivery.ChannelExpireAfter(root, "dev"); d != 90*time.Second {
		t.Fatalf("ChannelExpireAfter = %v", d)
	}
	postOriginal(t, root, nil)
	msgs, _, skips, err := channel.NewestSince(root, "dev", "", 10)
	if err != nil || len(msgs) != 1 || len(skips) != 0 {
		t.Fatalf("channel read: %d messages, skips %v, %v", len(msgs), skips, err)
	}
}

func FuzzParseChannelSettings(f *testing.F) {
	f.Add([]byte(`{"expire_after":"10m"}`))
	f.Add([]byte(`{"expire_after":"off","other":1}`))
	f.Add([]byte(`{"expire_after":5}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := delivery.ParseChannelSettings(raw)
		if err != nil {
			return
		}
		if s.ExpireAfter != "" {
			if d, err := delivery.ParseExpireAfter(s.ExpireAfter); err != nil || d < 0 || d > delivery.MaxExpireAfter {
				t.Fatalf("accepted %q: %v %v", s.ExpireAfter, d, err)
			}
		}
	})
}

func FuzzParseReport(f *testing.F) {
	f.Add([]byte(`{"message":"msg-20260111-120000-alice-0001","channel":"dev","agent":"bob","state":"refused","guard":"trust","decided_by":"bob"}`))
	f.Add([]byte(`{"message":"x","state":"answered"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m := channel.Message{From: "bob", Type: channel.TypeDeliveryReport}
		m.SetExtension(channel.ExtDeliveryReport, raw)
		r, ok := delivery.ParseReport(&m)
		if !ok {
			return
		}
		if !delivery.Bad(r.State) || tree.CheckName("agent", r.Agent) != nil || tree.CheckName("channel", r.Channel) != nil {
			t.Fatalf("accepted %+v", r)
		}
		if text := delivery.ReportText(r); !strings.HasPrefix(text, "[collab] ") {
			t.Fatalf("text %q", text)
		}
	})
}

func TestSweepAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		every time.Duration
		next  time.Time
		want  time.Duration
	}{
		{30 * time.Second, time.Time{}, 30 * time.Second},                     // nothing open
		{30 * time.Second, now.Add(time.Hour), 30 * time.Second},              // not sooner
		{30 * time.Second, now.Add(2 * time.Second), 2 * time.Second},         // an expiry ends
		{30 * time.Second, now.Add(-time.Second), 100 * time.Millisecond},     // overdue: soon, not at once
		{20 * time.Millisecond, now.Add(-time.Second), 20 * time.Millisecond}, // a short period stays
		{20 * time.Millisecond, now.Add(5 * time.Millisecond), 20 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := delivery.SweepAfter(tt.every, tt.next, now); got != tt.want {
			t.Errorf("SweepAfter(%v, %v) = %v, want %v", tt.every, tt.next.Sub(now), got, tt.want)
		}
	}
}
