package watcher

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

var t0 = time.Date(2026, 1, 11, 16, 30, 0, 0, time.UTC)

func sampleState() *state {
	return &state{
		Version: 1,
		Saved:   t0,
		Channels: map[string]channel.Cursor{
			"general": {Floor: t0.Add(-time.Hour), Seen: []string{"msg-20260111-163000-alice-0a0b.json"}},
			"version": {Floor: t0.Add(-time.Minute)},
		},
		Pending:  []ref{{Channel: "general", ID: "msg-20260111-162959-bob-ffff"}},
		Noticed:  map[string]time.Time{"msg-20260111-160000-bob-0001": t0},
		Budget:   budget{Day: "2026-01-11", Spent: 1.25},
		Awaiting: map[string]question{"general": {Job: "job-x", Asker: "bob"}},
	}
}

func TestSealRoundTrip(t *testing.T) {
	want := sampleState()
	data, err := seal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeState(data)
	if err != nil {
		t.Fatalf("decodeState(seal(s)) = %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

// TestStateEveryBitFlip flips each bit of a sealed state file in turn:
// every flip is detected, or leaves the state exactly as it was (a flip
// in the case of an envelope key, which encoding/json matches without
// regard to case). Every truncation is detected.
func TestStateEveryBitFlip(t *testing.T) {
	want := sampleState()
	data, err := seal(want)
	if err != nil {
		t.Fatal(err)
	}
	harmless := 0
	for i := range data {
		for bit := range 8 {
			bad := bytes.Clone(data)
			bad[i] ^= 1 << bit
			got, err := decodeState(bad)
			switch {
			case errors.Is(err, errCorrupt):
			case err != nil:
				t.Fatalf("byte %d bit %d: error %v does not wrap errCorrupt", i, bit, err)
			case !reflect.DeepEqual(got, want):
				t.Fatalf("byte %d bit %d (%q → %q): undetected change:\n got %+v\nwant %+v", i, bit, data[i], bad[i], got, want)
			default:
				harmless++
			}
		}
	}
	if harmless > 64 {
		t.Errorf("%d harmless flips: more than the envelope keys' case bits", harmless)
	}
	for n := range len(data) - 1 { // the last byte is the newline
		if _, err := decodeState(data[:n]); !errors.Is(err, errCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: err = %v, want errCorrupt", n, len(data), err)
		}
	}
}

func TestDecodeState(t *testing.T) {
	for _, tt := range []struct {
		name    string
		data    string
		corrupt bool
		want    *state
	}{
		{name: "version 1 (before sealing)", data: `{"version": 1, "saved": "2026-01-11T16:30:00Z", "channels": {"general": {"floor": "2026-01-11T15:30:00Z", "seen": ["a.json"]}}, "pending": [{"channel": "general", "id": "m"}]}`,
			want: &state{Version: 1, Saved: t0, Channels: map[string]channel.Cursor{"general": {Floor: t0.Add(-time.Hour), Seen: []string{"a.json"}}}, Pending: []ref{{"general", "m"}}}},
		{name: "empty", data: "", corrupt: true},
		{name: "null", data: "null", corrupt: true},
		{name: "array", data: "[]", corrupt: true},
		{name: "no version", data: `{"channels": {}}`, corrupt: true},
		{name: "unknown version", data: `{"version": 99}`, corrupt: true},
		{name: "version 0", data: `{"version": 0}`, corrupt: true},
		{name: "sealed without state", data: `{"version": 2, "sha256": "00"}`, corrupt: true},
		{name: "sealed without sum", data: `{"version": 2, "state": {"version": 1}}`, corrupt: true},
		{name: "sealed, wrong sum", data: `{"version": 2, "sha256": "0000000000000000000000000000000000000000000000000000000000000000", "state": {"version": 1}}`, corrupt: true},
		{name: "wrong types", data: `{"version": 1, "channels": {"general": {"floor": 42}}}`, corrupt: true},
		{name: "NUL", data: "{\"version\": 1, \x00}", corrupt: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeState([]byte(tt.data))
			if tt.corrupt {
				if !errors.Is(err, errCorrupt) {
					t.Errorf("err = %v, want errCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeSessions(t *testing.T) {
	s1 := session{CLI: "claude", ID: "s-1", Updated: t0}
	sealed, err := seal(map[string]session{"general": s1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		data    string
		corrupt bool
		want    map[string]session
	}{
		{name: "sealed", data: string(sealed), want: map[string]session{"general": s1}},
		{name: "bare map (before sealing)", data: `{"general": {"cli": "claude", "id": "s-1", "updated": "2026-01-11T16:30:00Z"}}`, want: map[string]session{"general": s1}},
		{name: "bare map with a channel named version", data: `{"version": {"cli": "claude", "id": "s-1", "updated": "2026-01-11T16:30:00Z"}}`, want: map[string]session{"version": s1}},
		{name: "empty map", data: `{}`, want: map[string]session{}},
		{name: "truncated", data: string(sealed[:len(sealed)/2]), corrupt: true},
		{name: "empty", data: "", corrupt: true},
		{name: "not a session", data: `{"general": 7}`, corrupt: true},
		{name: "unknown version", data: `{"version": 3, "sha256": "", "state": {}}`, corrupt: true},
		{name: "sealed, flipped", data: string(bytes.Replace(sealed, []byte("s-1"), []byte("s-3"), 1)), corrupt: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeSessions([]byte(tt.data))
			if tt.corrupt {
				if !errors.Is(err, errCorrupt) {
					t.Errorf("err = %v, want errCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestLoadStateSetsAside: a corrupt state file is renamed, never over an
// earlier corrupt copy, and a missing one is a first start.
func TestLoadStateSetsAside(t *testing.T) {
	root := tree.Root(t.TempDir())
	if st, err := loadState(root, "codex", t0); st != nil || err != nil {
		t.Fatalf("no state: loadState = %v, %v; want nil, nil", st, err)
	}
	dir := root.State("codex")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"watch.json.corrupt-20260111T163000Z", "watch.json.corrupt-20260111T163000Z-1"} {
		content := []byte{'{', byte('0' + i)}
		if err := os.WriteFile(filepath.Join(dir, stateFile), content, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := loadState(root, "codex", t0)
		var ce *corruptError
		if st != nil || !errors.As(err, &ce) || !errors.Is(err, errCorrupt) || ce.aside != want {
			t.Fatalf("loadState = %v, %v; want a corruptError kept as %s", st, err, want)
		}
		if got, err := os.ReadFile(filepath.Join(dir, want)); err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s = %q, %v; want %q", want, got, err, content)
		}
		if _, err := os.Stat(filepath.Join(dir, stateFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("watch.json still there after being set aside: %v", err)
		}
	}
	// What is saved next loads.
	if err := saveState(root, "codex", sampleState()); err != nil {
		t.Fatal(err)
	}
	if st, err := loadState(root, "codex", t0); err != nil || !reflect.DeepEqual(st, sampleState()) {
		t.Errorf("loadState after saveState = %+v, %v", st, err)
	}
}

func TestLoadSessionsCorrupt(t *testing.T) {
	root := tree.Root(t.TempDir())
	dir := root.State("codex")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sessionsFile), []byte(`{"general": {"cli": `), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := loadSessions(root, "codex", "claude", ScopeChannel, time.Hour, t0)
	if !errors.Is(err, errCorrupt) || s == nil || len(s.m) != 0 {
		t.Fatalf("loadSessions = %v, %v; want empty sessions and errCorrupt", s, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions.json.corrupt-20260111T163000Z")); err != nil {
		t.Errorf("the corrupt file was not kept aside: %v", err)
	}
	if err := s.put("general", "s-2", t0); err != nil {
		t.Fatal(err)
	}
	s2, err := loadSessions(root, "codex", "claude", ScopeChannel, time.Hour, t0)
	if err != nil || s2.get("general", t0) != "s-2" {
		t.Errorf("after a save: loadSessions = %v, %v; want session s-2", s2, err)
	}
}

func TestParseOutboxName(t *testing.T) {
	for _, tt := range []struct {
		name string
		want ref
		ok   bool
	}{
		{"general.msg-20260111-163000-alice-0a0b.json", ref{"general", "msg-20260111-163000-alice-0a0b"}, true},
		{"general.msg.json", ref{"general", "msg"}, true},
		{".general.msg.json.1234.tmp", ref{}, false},
		{"general.msg.json.corrupt-20260111T163000Z", ref{}, false},
		{"general.a.b.json", ref{}, false},
		{"gen eral.m.json", ref{}, false},
		{"general..json", ref{}, false},
		{"general.m/x.json", ref{}, false},
		{"nodot.json", ref{}, false},
	} {
		got, ok := parseOutboxName(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseOutboxName(%q) = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzDecodeState: any bytes decode or fail with errCorrupt, never panic;
// what decodes survives a save.
func FuzzDecodeState(f *testing.F) {
	sealed, _ := seal(sampleState())
	f.Add(sealed)
	f.Add([]byte(`{"version": 1, "channels": {"general": {"floor": "2026-01-11T15:30:00Z"}}}`))
	f.Add([]byte(`{"version": 2, "sha256": "", "state": null}`))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeState(data)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			return
		}
		again, err := seal(st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeState(again); err != nil {
			t.Fatalf("a decoded state does not decode once sealed: %v", err)
		}
		if _, err := decodeSessions(data); err != nil && !errors.Is(err, errCorrupt) {
			t.Fatalf("decodeSessions error %v does not wrap errCorrupt", err)
		}
	})
}
