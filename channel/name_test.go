package channel_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestParseName(t *testing.T) {
	at := time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)
	tests := []struct {
		name string
		file string
		want channel.Name // zero: not a message name
	}{
		{"seed example", "msg-20260111-163315-claude-4c78.json", channel.Name{Time: at, Agent: "claude", Hex: "4c78"}},
		{"agent with hyphen", "msg-20260111-163315-qc-1-00ff.json", channel.Name{Time: at, Agent: "qc-1", Hex: "00ff"}},
		{"agent with two hyphens", "msg-20260111-163315-a-b-c-abcd.json", channel.Name{Time: at, Agent: "a-b-c", Hex: "abcd"}},
		{"agent ending in hyphen", "msg-20260111-163315-qc--abcd.json", channel.Name{Time: at, Agent: "qc-", Hex: "abcd"}},
		{"agent that looks like hex", "msg-20260111-163315-beef-abcd.json", channel.Name{Time: at, Agent: "beef", Hex: "abcd"}},
		{"upper-case hex", "msg-20260111-163315-codex-ABCD.json", channel.Name{Time: at, Agent: "codex", Hex: "ABCD"}},
		{"underscore agent", "msg-20260111-163315-_x_-0000.json", channel.Name{Time: at, Agent: "_x_", Hex: "0000"}},
		{"64-char agent", "msg-20260111-163315-" + strings.Repeat("a", 64) + "-0000.json", channel.Name{Time: at, Agent: strings.Repeat("a", 64), Hex: "0000"}},
		{"leap day", "msg-20240229-000000-a-0000.json", channel.Name{Time: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Agent: "a", Hex: "0000"}},
		{"end of day", "msg-20261231-235959-a-ffff.json", channel.Name{Time: time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), Agent: "a", Hex: "ffff"}},

		{"empty", "", channel.Name{}},
		{"no prefix", "20260111-163315-claude-4c78.json", channel.Name{}},
		{"no suffix", "msg-20260111-163315-claude-4c78", channel.Name{}},
		{"tmp suffix", "msg-20260111-163315-claude-4c78.json.tmp", channel.Name{}},
		{"double suffix", "msg-20260111-163315-claude-4c78.json.json", channel.Name{}},
		{"dot-file", ".msg-20260111-163315-claude-4c78.json", channel.Name{}},
		{"upper-case prefix", "MSG-20260111-163315-claude-4c78.json", channel.Name{}},
		{"no agent", "msg-20260111-163315--4c78.json", channel.Name{}},
		{"no agent no dash", "msg-20260111-163315-4c78.json", channel.Name{}},
		{"agent starts with hyphen", "msg-20260111-163315--x-4c78.json", channel.Name{}},
		{"agent with dot", "msg-20260111-163315-a.b-4c78.json", channel.Name{}},
		{"agent with space", "msg-20260111-163315-a b-4c78.json", channel.Name{}},
		{"agent with dot dot", "msg-20260111-163315-..-4c78.json", channel.Name{}},
		{"65-char agent", "msg-20260111-163315-" + strings.Repeat("a", 65) + "-0000.json", channel.Name{}},
		{"short hex", "msg-20260111-163315-claude-4c7.json", channel.Name{}},
		{"long hex", "msg-20260111-163315-claude-4c789.json", channel.Name{}},
		{"non-hex", "msg-20260111-163315-claude-4c7g.json", channel.Name{}},
		{"no hex", "msg-20260111-163315-claude-.json", channel.Name{}},
		{"bad month", "msg-20261311-163315-claude-4c78.json", channel.Name{}},
		{"bad day", "msg-20260230-163315-claude-4c78.json", channel.Name{}},
		{"bad hour", "msg-20260111-243315-claude-4c78.json", channel.Name{}},
		{"letters in date", "msg-2026O111-163315-claude-4c78.json", channel.Name{}},
		{"underscore between date and time", "msg-20260111_163315-claude-4c78.json", channel.Name{}},
		{"short date", "msg-2026011-163315-claude-4c78.json", channel.Name{}},
		{"signed digits", "msg-+2026011-163315-claude-4c78.json", channel.Name{}},
		{"no separator after time", "msg-20260111-163315claude-4c78.json", channel.Name{}},
		{"path", "x/msg-20260111-163315-claude-4c78.json", channel.Name{}},
		{"NUL in agent", "msg-20260111-163315-cl\x00de-4c78.json", channel.Name{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := channel.ParseName(tt.file)
			if tt.want == (channel.Name{}) {
				if !errors.Is(err, channel.ErrNotMessageName) {
					t.Fatalf("ParseName(%q) = %+v, %v; want ErrNotMessageName", tt.file, got, err)
				}
				if _, err := channel.ParseID(strings.TrimSuffix(tt.file, ".json")); err == nil && strings.HasSuffix(tt.file, ".json") {
					t.Errorf("ParseID accepts the id of %q that ParseName refuses", tt.file)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseName(%q): %v", tt.file, err)
			}
			if !got.Time.Equal(tt.want.Time) || got.Agent != tt.want.Agent || got.Hex != tt.want.Hex {
				t.Errorf("ParseName(%q) = %+v, want %+v", tt.file, got, tt.want)
			}
			if got.Time.Location() != time.UTC {
				t.Errorf("ParseName(%q).Time is in %v, want UTC", tt.file, got.Time.Location())
			}
			id := strings.TrimSuffix(tt.file, ".json")
			if got.ID() != id {
				t.Errorf("ID() = %q, want %q", got.ID(), id)
			}
			byID, err := channel.ParseID(id)
			if err != nil || byID != got {
				t.Errorf("ParseID(%q) = %+v, %v; want %+v", id, byID, err, got)
			}
		})
	}
}

func TestParseIDRefusesFileName(t *testing.T) {
	if _, err := channel.ParseID("msg-20260111-163315-claude-4c78.json"); err == nil {
		t.Error("ParseID accepts a file name with .json")
	}
}

func TestNewID(t *testing.T) {
	// A time in another zone is written in UTC.
	tz := time.FixedZone("UTC+2", 2*3600)
	tests := []struct {
		name  string
		agent string
		t     time.Time
		hex   string
		want  string
	}{
		{"seed example", "claude", time.Date(2026, 1, 11, 16, 33, 15, 123e6, time.UTC), "4c78", "msg-20260111-163315-claude-4c78"},
		{"hyphenated agent", "qc-1", time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC), "0a0b", "msg-20260111-163315-qc-1-0a0b"},
		{"local zone to UTC", "codex", time.Date(2026, 1, 1, 1, 0, 0, 0, tz), "ffff", "msg-20251231-230000-codex-ffff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := channel.NewID(tt.agent, tt.t, tt.hex)
			if got != tt.want {
				t.Fatalf("NewID = %q, want %q", got, tt.want)
			}
			n, err := channel.ParseName(got + ".json")
			if err != nil {
				t.Fatalf("ParseName(NewID): %v", err)
			}
			if n.Agent != tt.agent || n.Hex != tt.hex || !n.Time.Equal(tt.t.Truncate(time.Second)) {
				t.Errorf("ParseName(NewID) = %+v, want agent %q hex %q time %v", n, tt.agent, tt.hex, tt.t.Truncate(time.Second))
			}
		})
	}
}

// FuzzNameRoundTrip: every valid agent, time (years 0-9999) and hex4 makes
// an id that parses back to the same parts.
func FuzzNameRoundTrip(f *testing.F) {
	f.Add("claude", int64(1768149195), uint16(0x4c78))
	f.Add("qc-1", int64(0), uint16(0))
	f.Add("qc-", int64(-62135596800), uint16(0xffff))     // year 1
	f.Add("a-b-c-d", int64(253402300799), uint16(0xabcd)) // 9999-12-31
	f.Add("beef", int64(1), uint16(0xbeef))
	f.Fuzz(func(t *testing.T, agent string, sec int64, h uint16) {
		if !tree.ValidName(agent) {
			t.Skip()
		}
		tm := time.Unix(sec, 0).UTC()
		if tm.Year() < 0 || tm.Year() > 9999 {
			t.Skip()
		}
		hex := fmtHex(h)
		id := channel.NewID(agent, tm, hex)
		n, err := channel.ParseName(id + ".json")
		if err != nil {
			t.Fatalf("ParseName(%q): %v", id+".json", err)
		}
		if n.Agent != agent || n.Hex != hex || !n.Time.Equal(tm) {
			t.Fatalf("ParseName(%q) = %+v, want %q %q %v", id+".json", n, agent, hex, tm)
		}
		if n.ID() != id {
			t.Fatalf("ID() = %q, want %q", n.ID(), id)
		}
	})
}

func fmtHex(h uint16) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[h>>12], digits[h>>8&15], digits[h>>4&15], digits[h&15]})
}

// FuzzParseName: ParseName never panics, and what it accepts is a well
// formed name that it gives back unchanged (modulo the hex's case).
func FuzzParseName(f *testing.F) {
	for _, s := range []string{
		"msg-20260111-163315-claude-4c78.json",
		"msg-20260111-163315-qc-1-4c78.json",
		"msg-20260111-163315--4c78.json",
		"msg-20260111-163315-4c78.json",
		"msg-99999999-999999-a-0000.json",
		"msg-.json", "msg-", ".json", "",
		"msg-20260111-163315-a/b-4c78.json",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file string) {
		n, err := channel.ParseName(file)
		if err != nil {
			if !errors.Is(err, channel.ErrNotMessageName) {
				t.Fatalf("ParseName(%q) = %v, want ErrNotMessageName", file, err)
			}
			return
		}
		if !tree.ValidName(n.Agent) {
			t.Fatalf("ParseName(%q) accepted agent %q", file, n.Agent)
		}
		if len(n.Hex) != 4 {
			t.Fatalf("ParseName(%q) accepted hex %q", file, n.Hex)
		}
		if strings.ContainsAny(file, "/\x00") || strings.HasPrefix(file, ".") {
			t.Fatalf("ParseName accepted %q", file)
		}
		if got := n.ID() + ".json"; got != file {
			t.Fatalf("ParseName(%q).ID() = %q, not the name it came from", file, got)
		}
	})
}
