package modelcli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// BenchmarkOverhead measures what each CLI adapter costs the watcher
// around the CLI call: building the command line and environment, then
// reading and parsing the CLI's output into events and a response. Each
// adapter, the command adapter among them, runs a stub program that
// discards its standard input and prints a recorded fixture at once, and
// each iteration also runs the same stub bare, with proc.Run (the same
// stdin, environment and output cap), in alternating order so that drift
// and warm caches favour neither. The metrics:
//
//   - adapter-µs/op: the adapter's Run, stub included;
//   - bare-µs/op: proc.Run of the stub: starting a process, feeding it,
//     collecting its output and waiting for it;
//   - overhead-µs/op: the median of the paired differences, the
//     adapter's own cost. The model's time is not in it (the stub has
//     none), nor is the job record (OnEvent is a no-op collector).
//
// Process start-up dominates both runs, so the difference is noisy: run a
// few thousand iterations, and -count to see the spread.
//
//	go test ./internal/agent/modelcli -run '^$' -bench Overhead -benchtime 2000x -count 3
func BenchmarkOverhead(b *testing.B) {
	stub := buildStub(b)
	prompt := strings.Repeat("A line of the transcript the watcher puts in the prompt.\n", 40) // about 2 KiB
	for _, bc := range []struct {
		name    string
		fixture string
		adapter runner
	}{
		{"command/answer", "claude-text.txt", &modelcli.Command{Argv: []string{stub}}},
		{"claude/answer", "claude-stream.jsonl", &claude.Adapter{Bin: stub}},
		{"claude/tool", "claude-tool-stream.jsonl", &claude.Adapter{Bin: stub}},
		{"codex/answer", "codex-exec.jsonl", &codex.Adapter{Bin: stub}},
		{"codex/tool", "codex-tool.jsonl", &codex.Adapter{Bin: stub}},
		{"gemini/answer", "gemini-stream.jsonl", &gemini.Adapter{Bin: stub}},
		{"gemini/tool", "gemini-tool-stream.jsonl", &gemini.Adapter{Bin: stub}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fixture, err := filepath.Abs(filepath.Join("testdata", bc.fixture))
			if err != nil {
				b.Fatal(err)
			}
			var events []modelcli.Event
			req := modelcli.Request{
				Prompt:  prompt,
				Env:     []string{stubFixture + "=" + fixture, "COLLAB_AGENT=bench", "COLLAB_CHANNEL=dev", "COLLAB_MESSAGE_ID=msg-1", "COLLAB_FROM=human", "COLLAB_HOPS=0"},
				Timeout: time.Minute,
				OnEvent: func(e modelcli.Event) { events = append(events, e) },
			}
			ctx := context.Background()
			bare := func() time.Duration {
				t0 := time.Now()
				res, err := proc.Run(ctx, proc.Spec{Argv: []string{stub}, Env: append(os.Environ(), req.Env...), Stdin: []byte(prompt), Timeout: req.Timeout})
				if err != nil || len(res.Stdout) == 0 {
					b.Fatalf("bare: %v (stderr %q)", err, res.StderrTail)
				}
				return time.Since(t0)
			}
			adapter := func() time.Duration {
				events = events[:0]
				t0 := time.Now()
				resp, err := bc.adapter.Run(ctx, req)
				if err != nil || resp.Text == "" {
					b.Fatalf("adapter: %v (text %q, stderr %q)", err, resp.Text, resp.Stderr)
				}
				return time.Since(t0)
			}
			var inAdapter, inBare time.Duration
			var diffs []time.Duration
			i := 0
			for b.Loop() {
				var a, p time.Duration
				if i%2 == 0 {
					a, p = adapter(), bare()
				} else {
					p, a = bare(), adapter()
				}
				i++
				inAdapter += a
				inBare += p
				diffs = append(diffs, a-p)
			}
			slices.Sort(diffs)
			n := float64(b.N)
			b.ReportMetric(float64(inAdapter.Microseconds())/n, "adapter-µs/op")
			b.ReportMetric(float64(inBare.Microseconds())/n, "bare-µs/op")
			b.ReportMetric(float64(diffs[len(diffs)/2].Nanoseconds())/1e3, "overhead-µs/op")
		})
	}
}

// stubFixture names the file the stub prints.
const stubFixture = "MODELCLI_BENCH_FIXTURE"

const stubSource = `package main

import (
	"io"
	"os"
)

func main() {
	io.Copy(io.Discard, os.Stdin)
	out, err := os.ReadFile(os.Getenv("` + stubFixture + `"))
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(2)
	}
	os.Stdout.Write(out)
}
`

// runner is what the adapters have in common.
type runner interface {
	Run(ctx context.Context, req modelcli.Request) (modelcli.Response, error)
}

// buildStub compiles the stub, a small static Go program that starts in
// about a millisecond, into a temporary folder.
func buildStub(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(stubSource), 0o644); err != nil {
		b.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("building the stub needs go on PATH")
	}
	stub := filepath.Join(dir, "stub")
	build := exec.Command(goBin, "build", "-o", stub, src)
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the stub: %v\n%s", err, out)
	}
	return stub
}
