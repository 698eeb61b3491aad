package inbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

var base = time.Date(2026, 1, 11, 10, 0, 0, 0, time.UTC)

// post writes a message whose writer's clock says at.
func post(t testing.TB, root, c, from, to, text string, at time.Time) channel.Message {
	t.Helper()
	w := &channel.Writer{Root: tree.Root(root), Now: func() time.Time { return at }}
	m := &channel.Message{SessionID: c, From: from, To: to, Content: channel.Content{Text: text}}
	if err := w.Post(m); err != nil {
		t.Fatal(err)
	}
	return *m
}

func newInbox(t testing.TB, root, agent string, chans ...string) *Inbox {
	t.Helper()
	b, err := New(tree.Root(root), agent, Options{Channels: chans, Now: func() time.Time { return base.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ids(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Message.ID)
	}
	return out
}

func want(t *testing.T, what string, got []Item, msgs ...channel.Message) {
	t.Helper()
	var w []string
	for _, m := range msgs {
		w = append(w, m.ID)
	}
	if g := ids(got); !slices.Equal(g, w) {
		t.Errorf("%s = %v, want %v", what, g, w)
	}
}

func TestCheckPeekAndRestart(t *testing.T) {
	root := t.TempDir()
	m1 := post(t, root, "dev", "claude", "codex", "please review", base)
	post(t, root, "dev", "codex", "claude", "done", base.Add(time.Second)) // from codex: not for it
	post(t, root, "dev", "claude", "all", "fyi, broadcast", base.Add(2*time.Second))
	m4 := post(t, root, "ops", "gemini", "all", "@codex the deploy is blocked", base.Add(3*time.Second))
	m5 := post(t, root, "dev", "gemini", "all", "Codex: one more", base.Add(4*time.Second))

	b := newInbox(t, root, "codex")
	peek, err := b.Peek()
	if err != nil {
		t.Fatal(err)
	}
	want(t, "peek", peek, m4, m1, m5) // high first
	if peek[0].Channel != "ops" || peek[0].Priority != High || peek[1].Priority != Normal {
		t.Errorf("items = %+v", peek)
	}
	again, _ := b.Peek()
	want(t, "second peek", again, m4, m1, m5)

	got, err := b.Check()
	if err != nil {
		t.Fatal(err)
	}
	want(t, "check", got, m4, m1, m5)
	got, _ = b.Check()
	want(t, "check after check", got)

	// A new process (a restart) reads the saved cursor.
	m6 := post(t, root, "dev", "claude", "codex", "and this", base.Add(5*time.Second))
	b2 := newInbox(t, root, "codex")
	got, err = b2.Check()
	if err != nil {
		t.Fatal(err)
	}
	want(t, "check after restart", got, m6)
	for _, c := range []string{"dev", "ops"} {
		if _, err := os.Stat(filepath.Join(tree.Root(root).Inbox("codex"), c+".json")); err != nil {
			t.Errorf("cursor of %s: %v", c, err)
		}
	}
	// Another agent's inbox is its own.
	other, _ := newInbox(t, root, "claude").Peek()
	if len(other) != 1 || other[0].Message.From != "codex" {
		t.Errorf("claude's inbox = %v", ids(other))
	}
}

func TestChannelsRestrict(t *testing.T) {
	root := t.TempDir()
	post(t, root, "dev", "claude", "codex", "a", base)
	m2 := post(t, root, "ops", "claude", "codex", "b", base)
	got, err := newInbox(t, root, "codex", "ops").Check()
	if err != nil {
		t.Fatal(err)
	}
	want(t, "ops only", got, m2)
	if all, _ := newInbox(t, root, "codex").Peek(); len(all) != 1 || all[0].Channel != "dev" {
		t.Errorf("after checking ops, all channels = %v", ids(all))
	}
	if _, err := New(tree.Root(root), "codex", Options{Channels: []string{"../x"}}); err == nil {
		t.Error("a bad channel name was accepted")
	}
	if _, err := New(tree.Root(root), "a/b", Options{}); err == nil {
		t.Error("a bad agent name was accepted")
	}
	if got, err := newInbox(t, t.TempDir(), "codex").Check(); err != nil || len(got) != 0 {
		t.Errorf("empty tree: %v, %v", got, err)
	}
}

// TestSkewedClockNotLost: a message named earlier than one already
// acknowledged (its writer's clock is behind) that arrives afterwards is
// still unread, whether the acknowledgement came from Check, from an id or
// from a time.
func TestSkewedClockNotLost(t *testing.T) {
	tests := []struct {
		name string
		ack  func(b *Inbox, last channel.Message) error
	}{
		{"check", func(b *Inbox, _ channel.Message) error { _, err := b.Check(); return err }},
		{"ack id", func(b *Inbox, last channel.Message) error { _, err := b.Ack(Until{ID: last.ID}); return err }},
		{"ack time", func(b *Inbox, last channel.Message) error {
			_, err := b.Ack(Until{Time: last.Time()})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			post(t, root, "dev", "claude", "codex", "first", base)
			last := post(t, root, "dev", "claude", "codex", "second", base.Add(time.Minute))
			if err := tt.ack(newInbox(t, root, "codex"), last); err != nil {
				t.Fatal(err)
			}
			if got, _ := newInbox(t, root, "codex").Peek(); len(got) != 0 {
				t.Fatalf("after ack: %v", ids(got))
			}
			late := post(t, root, "dev", "gemini", "codex", "from a slow clock", base.Add(30*time.Second))
			got, err := newInbox(t, root, "codex").Check()
			if err != nil {
				t.Fatal(err)
			}
			want(t, "after the late message", got, late)
		})
	}
}

func TestAckUntil(t *testing.T) {
	root := t.TempDir()
	m1 := post(t, root, "dev", "claude", "codex", "one", base)
	m2 := post(t, root, "ops", "claude", "codex", "two", base.Add(time.Minute))
	m3 := post(t, root, "dev", "claude", "codex", "three", base.Add(2*time.Minute))
	b := newInbox(t, root, "codex")

	n, err := b.Ack(Until{Time: base.Add(time.Minute)})
	if err != nil || n != 2 {
		t.Fatalf("ack until time = %d, %v; want 2", n, err)
	}
	got, _ := b.Peek()
	want(t, "after ack until time", got, m3)

	if _, err := b.Ack(Until{ID: channel.NewID("claude", base, "ffff")}); !errors.Is(err, ErrUnknownMessage) {
		t.Errorf("ack of an unknown id: %v", err)
	}
	n, err = b.Ack(Until{ID: m3.ID})
	if err != nil || n != 1 {
		t.Fatalf("ack until id = %d, %v; want 1", n, err)
	}
	// Acknowledging again is harmless.
	if n, err := b.Ack(Until{ID: m2.ID}); err != nil || n != 0 {
		t.Errorf("repeated ack = %d, %v", n, err)
	}
	_ = m1
}

// TestAckIDLeavesLaterArrivals: a message that sorts before the id but
// arrived after it may not have been seen when the agent read up to the id.
func TestAckIDLeavesLaterArrivals(t *testing.T) {
	root := t.TempDir()
	early := post(t, root, "dev", "claude", "codex", "early", base)
	x := post(t, root, "dev", "claude", "codex", "x", base.Add(time.Minute))
	slow := post(t, root, "dev", "gemini", "codex", "slow clock, arrived after x", base.Add(30*time.Second))
	dir := tree.Root(root).Channel("dev")
	arrive := func(m channel.Message, at time.Time) {
		if err := os.Chtimes(filepath.Join(dir, m.File), at, at); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	arrive(early, now.Add(-3*time.Second))
	arrive(x, now.Add(-2*time.Second))
	arrive(slow, now.Add(-time.Second))

	b := newInbox(t, root, "codex")
	if n, err := b.Ack(Until{ID: x.ID}); err != nil || n != 2 {
		t.Fatalf("ack = %d, %v; want 2", n, err)
	}
	got, _ := b.Peek()
	want(t, "left unread", got, slow)
}

func TestPriority(t *testing.T) {
	tests := []struct {
		to, text string
		want     Priority
	}{
		{"codex", "please look", Normal},
		{"codex", "@codex please look", Normal},
		{"all", "@codex please look", Normal},
		{"codex", "@claude fyi", High},
		{"all", "@codex and @claude: sync up", High},
		{"all", "@codex @CODEX twice is one", Normal},
		{"codex", "this is URGENT", High},
		{"codex", "asap please", High},
		{"codex", "I am blocked.", High},
		{"codex", "critical: disk full", High},
		{"codex", "non-critical nit", High}, // a whole word after '-'
		{"codex", "unblocked now", Normal},
		{"codex", "criticality is low", Normal},
		{"codex", "mail me at a@b.example", Normal},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			m := channel.Message{From: "gemini", To: tt.to, Content: channel.Content{Text: tt.text}}
			if got := PriorityOf(&m); got != tt.want {
				t.Errorf("PriorityOf(to %s, %q) = %s, want %s", tt.to, tt.text, got, tt.want)
			}
		})
	}
}

func TestMentioned(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"@a", []string{"a"}},
		{"@qc-1 and @qc-10, @QC-1", []string{"qc-1", "qc-10"}},
		{"x@y @ @-z (@w)", []string{"w"}},
		{"@" + strings.Repeat("a", 65), nil},
	}
	for _, tt := range tests {
		if got := Mentioned(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("Mentioned(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func FuzzMentioned(f *testing.F) {
	for _, s := range []string{"@a @b", "x@y", "@qc-1,@QC-10", "@-a", "@@a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := Mentioned(text)
		for _, name := range got {
			// Every name found is one that addressing would match.
			if !tree.ValidName(name) || !channel.Mentions(text, name) {
				t.Fatalf("Mentioned(%q) has %q, which channel.Mentions does not match", text, name)
			}
		}
	})
}

func TestParseUntil(t *testing.T) {
	id := channel.NewID("qc-1", base, "0a1b")
	tests := []struct {
		in   string
		want Until
		ok   bool
	}{
		{id, Until{ID: id}, true},
		{"2026-01-11T10:00:00Z", Until{Time: base}, true},
		{"2026-01-11T10:00:00.5Z", Until{Time: base.Add(500 * time.Millisecond)}, true},
		{"2026-01-11T11:00:00+01:00", Until{Time: base}, true},
		{"", Until{}, false},
		{"msg-nonsense", Until{}, false},
		{"yesterday", Until{}, false},
		{"2026-01-11 10:00:00", Until{}, false},
	}
	for _, tt := range tests {
		got, err := ParseUntil(tt.in)
		if (err == nil) != tt.ok || got.ID != tt.want.ID || !got.Time.Equal(tt.want.Time) {
			t.Errorf("ParseUntil(%q) = %+v, %v; want %+v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseUntil(f *testing.F) {
	for _, s := range []string{"msg-20260111-100000-a-0000", "2026-01-11T10:00:00Z", "", "msg-", "2026-13-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUntil(s)
		if err != nil {
			return
		}
		switch {
		case u.ID != "":
			if _, err := channel.ParseID(u.ID); err != nil || u.ID != s || !u.Time.IsZero() {
				t.Fatalf("ParseUntil(%q) = %+v", s, u)
			}
		case u.Time.IsZero():
			t.Fatalf("ParseUntil(%q) gave neither id nor time", s)
		}
	})
}

// TestAliasesInChannel: an agent's alias counts only in the channel it is
// given for.
func TestAliasesInChannel(t *testing.T) {
	root := t.TempDir()
	in := post(t, root, "review--i1", "human", "all", "@reviewer please review", base)
	post(t, root, "dev", "human", "all", "@reviewer please review", base.Add(time.Second))
	b, err := New(tree.Root(root), "reviewer--i1", Options{Now: func() time.Time { return base.Add(time.Hour) },
		Aliases: map[string][]string{"review--i1": {"reviewer"}}})
	if err != nil {
		t.Fatal(err)
	}
	items, err := b.Peek()
	if err != nil {
		t.Fatal(err)
	}
	want(t, "Peek", items, in)
	items, _, err = b.PeekNewest(10)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "PeekNewest", items, in)
	if n, err := b.Ack(Until{Time: base.Add(time.Minute)}); err != nil || n != 1 {
		t.Errorf("Ack: %d, %v; want 1", n, err)
	}
	if items, _ := newInbox(t, root, "reviewer--i1").Peek(); len(items) != 0 {
		t.Errorf("without aliases: %v", ids(items))
	}
}

// FuzzDecodeCursor: any cursor file is read as a cursor of message names
// or refused, and a cursor read is written and read back the same (the
// mount's inbox and a remote host's share the format).
func FuzzDecodeCursor(f *testing.F) {
	for _, s := range []string{
		`{"after":"msg-20260101-000000-a-0000"}`, `{}`, `{"after":"../x"}`, `[]`, "", "\xff",
		`{"version":1,"cursor":{"floor":"2026-01-01T00:00:00Z","seen":["msg-20260101-000000-a-0000.json"]}}`,
		`{"version":1,"cursor":{"seen":["../x"]}}`, `{"version":1}`, `{"version":2,"cursor":{}}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		cur, err := DecodeCursor(data)
		if err != nil {
			return
		}
		for _, name := range cur.Seen {
			if _, err := channel.ParseName(name); err != nil {
				t.Fatalf("name %q accepted", name)
			}
		}
		if err := WriteCursor(dir, "dev", cur, time.Now(), 0o600); err != nil {
			return // a time json cannot write
		}
		again, err := ReadCursor(dir, "dev")
		if err != nil || !again.Floor.Equal(cur.Floor) || !slices.Equal(again.Seen, cur.Seen) {
			t.Fatalf("round trip of %s: %+v, %v", data, again, err)
		}
	})
}
