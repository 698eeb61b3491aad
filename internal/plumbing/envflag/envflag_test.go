package envflag

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func newSet() (*pflag.FlagSet, *string, *[]string, *Seconds) {
	fs := pflag.NewFlagSet("tool", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ch := fs.String("channel", "def", "the channel")
	Alias(fs, "session", "channel")
	FromEnv(fs, "channel", "T_CHANNEL", "T_SESSION")
	tags := fs.StringSlice("tag", []string{"x"}, "tags")
	FromEnv(fs, "tag", "T_TAGS")
	d := Seconds(time.Minute)
	fs.Var(&d, "stale", "after")
	FromEnv(fs, "stale", "T_STALE")
	return fs, ch, tags, &d
}

func TestPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		channel string
		tags    []string
		stale   time.Duration
		source  string
	}{
		{"defaults", nil, nil, "def", []string{"x"}, time.Minute, "--channel"},
		{"first variable", nil, map[string]string{"T_CHANNEL": "a", "T_SESSION": "b"}, "a", []string{"x"}, time.Minute, "T_CHANNEL"},
		{"second variable", nil, map[string]string{"T_SESSION": "b"}, "b", []string{"x"}, time.Minute, "T_SESSION"},
		{"flag wins", []string{"--channel", "f"}, map[string]string{"T_CHANNEL": "a"}, "f", []string{"x"}, time.Minute, "--channel"},
		{"alias is the flag", []string{"--session", "s"}, map[string]string{"T_CHANNEL": "a"}, "s", []string{"x"}, time.Minute, "--channel"},
		{"a list replaces its default", nil, map[string]string{"T_TAGS": "p,q"}, "def", []string{"p", "q"}, time.Minute, "--channel"},
		{"seconds", nil, map[string]string{"T_STALE": "90"}, "def", []string{"x"}, 90 * time.Second, "--channel"},
		{"a duration", []string{"--stale", "2h"}, nil, "def", []string{"x"}, 2 * time.Hour, "--channel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, ch, tags, d := newSet()
			if err := Parse(fs, tt.args, func(k string) string { return tt.env[k] }); err != nil {
				t.Fatal(err)
			}
			if *ch != tt.channel || !slices.Equal(*tags, tt.tags) || time.Duration(*d) != tt.stale {
				t.Errorf("channel %q tags %v stale %v; want %q %v %v", *ch, *tags, time.Duration(*d), tt.channel, tt.tags, tt.stale)
			}
			if got := Source(fs, "channel"); got != tt.source {
				t.Errorf("Source = %q, want %q", got, tt.source)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	fs, _, _, _ := newSet()
	var ue *UsageError
	if err := Parse(fs, []string{"--nope"}, func(string) string { return "" }); !errors.As(err, &ue) || !strings.Contains(err.Error(), "see 'tool --help'") {
		t.Errorf("unknown flag: %v", err)
	}
	fs, _, _, _ = newSet()
	if err := Parse(fs, nil, func(k string) string { return map[string]string{"T_STALE": "soon"}[k] }); !errors.As(err, &ue) || !strings.Contains(err.Error(), `T_STALE="soon"`) {
		t.Errorf("bad variable: %v", err)
	}
	fs, _, _, _ = newSet()
	if err := Parse(fs, []string{"--help"}, func(string) string { return "" }); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	if f := fs.Lookup("channel"); !strings.Contains(f.Usage, "(also --session) (env T_CHANNEL, then T_SESSION)") {
		t.Errorf("usage %q does not name the alias and the variables", f.Usage)
	}
}

func FuzzSeconds(f *testing.F) {
	for _, s := range []string{"90", "1.5", "2h", "-3", "NaN", "1e300", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d Seconds
		if d.Set(s) == nil && s == "NaN" {
			t.Fatal("NaN taken")
		}
	})
}
