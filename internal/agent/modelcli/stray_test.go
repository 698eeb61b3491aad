package modelcli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
)

// TestStrayLinePerCLI: in each CLI's own format, a line that is not its
// JSON, printed in the middle of a run that succeeds, comes out of Line at
// once as an error event carrying it (a long one cut to MaxStrayLine and
// marked truncated), in order with the other events, and the run still
// succeeds with the same reply.
func TestStrayLinePerCLI(t *testing.T) {
	tests := []struct {
		cli     string
		fixture string
		at      int // the stray line goes before this line of the fixture
		parser  func(now func() time.Time) modelcli.LineParser
	}{
		{"claude stream-json", "claude-stream.jsonl", 1, func(now func() time.Time) modelcli.LineParser { return &claude.Parser{Now: now} }},
		{"codex json", "codex-exec.jsonl", 2, func(now func() time.Time) modelcli.LineParser { return &codex.Parser{Now: now} }},
		// Between two chunks of text, which the parser holds back: the
		// text before the line comes out first.
		{"gemini stream-json", "gemini-stream.jsonl", 4, func(now func() time.Time) modelcli.LineParser { return &gemini.Parser{Now: now} }},
	}
	const stray = "Warning: something outside the protocol"
	long := "Traceback " + strings.Repeat("x", 3<<10)
	for _, tt := range tests {
		t.Run(tt.cli, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
			clean, err := modelcli.ParseOutput(tt.parser(nil), out)
			if err != nil {
				t.Fatalf("the fixture alone: %v", err)
			}

			tick := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			p := tt.parser(func() time.Time { tick = tick.Add(time.Second); return tick })
			var got []modelcli.Event // as Line returns them: what OnEvent gets
			feed := func(l []byte) []modelcli.Event {
				evs := p.Line(l)
				got = append(got, evs...)
				return evs
			}
			for i, l := range lines {
				if i == tt.at {
					evs := feed([]byte(stray))
					if len(evs) == 0 || evs[len(evs)-1].Kind != modelcli.EventError || evs[len(evs)-1].Text != stray || evs[len(evs)-1].Truncated {
						t.Errorf("the stray line gave %+v, want last an error event carrying it", evs)
					}
				}
				if i == len(lines)-1 {
					evs := feed([]byte(long))
					if len(evs) == 0 {
						t.Fatal("the long stray line gave no event")
					}
					e := evs[len(evs)-1]
					if e.Kind != modelcli.EventError || !e.Truncated || len(e.Text) > modelcli.MaxStrayLine ||
						!strings.HasPrefix(long, strings.TrimSuffix(e.Text, "…")) {
						t.Errorf("the long stray line gave last %s %.40q (%d bytes, truncated %v), want an error event with its start, marked truncated",
							e.Kind, e.Text, len(e.Text), e.Truncated)
					}
				}
				feed(l)
			}
			resp, err := p.Finish(nil, nil)
			if err != nil || resp.Text != clean.Text {
				t.Fatalf("with stray lines: text %q, error %v; want success with %q", resp.Text, err, clean.Text)
			}
			if last := resp.Events[len(resp.Events)-1]; last.Kind != modelcli.EventCompleted {
				t.Errorf("last event %s, want completed", last.Kind)
			}
			if !slices.EqualFunc(got, resp.Events[:len(got)], func(a, b modelcli.Event) bool {
				return a.Kind == b.Kind && a.Text == b.Text && a.Time.Equal(b.Time)
			}) {
				t.Errorf("the events Line returned are not the response's first ones")
			}
			strays := 0
			for i, e := range resp.Events {
				if i > 0 && e.Time.Before(resp.Events[i-1].Time) {
					t.Errorf("event %d (%s %q) is before the one it follows", i, e.Kind, e.Text)
				}
				if e.Kind == modelcli.EventError {
					strays++
				}
			}
			if strays != 2 {
				t.Errorf("%d error events, want the 2 stray lines", strays)
			}
		})
	}
}
