// Package clitest is what the tests of the model-CLI adapters
// (modelcli/claude, modelcli/codex, modelcli/gemini) share: the recorded
// fixtures in modelcli/testdata, checks every parser's response must pass,
// a fake CLI that is the test binary itself (fake.go), and runs of the
// real CLIs against package fakemodel (real.go).
//
// It is for tests only: its functions fail the test they are given.
//
// # Paths
//
// Paths are as seen from an adapter's package folder, where its tests run:
// the shared fixtures are in [Dir], "../testdata".
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// Dir is the folder of the recorded fixtures, modelcli/testdata: the
// output of the real CLIs recorded against package fakemodel (see its
// README), each stdout file with a NAME.meta.json beside it.
var Dir = filepath.Join("..", "testdata")

// Runner runs a model CLI once: each adapter is one.
type Runner interface {
	Run(ctx context.Context, req modelcli.Request) (modelcli.Response, error)
}

// ReadFile returns the content of the named file, or fails tb.
func ReadFile(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Recorded returns the fixture in Dir whose standard output is the file
// stdout: that output, its standard error and its exit status.
func Recorded(tb testing.TB, stdout string) (out, stderr []byte, exit int) {
	tb.Helper()
	base := filepath.Join(Dir, strings.TrimSuffix(stdout, filepath.Ext(stdout)))
	var meta struct {
		Exit   int    `json:"exit"`
		Stderr string `json:"stderr"`
	}
	if err := json.Unmarshal(ReadFile(tb, base+".meta.json"), &meta); err != nil {
		tb.Fatal(err)
	}
	if meta.Stderr != "" {
		stderr = ReadFile(tb, filepath.Join(Dir, meta.Stderr))
	}
	return ReadFile(tb, filepath.Join(Dir, stdout)), stderr, meta.Exit
}

// RecordedOutputs returns the standard-output file of every fixture in
// Dir recorded from cli ("claude", "codex", "gemini"), for a test that
// must cover them all. It fails tb if there are none.
func RecordedOutputs(tb testing.TB, cli string) []string {
	tb.Helper()
	metas, err := filepath.Glob(filepath.Join(Dir, cli+"-*.meta.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(metas) == 0 {
		tb.Fatalf("no %s fixtures in %s", cli, Dir)
	}
	var outs []string
	for _, m := range metas {
		var meta struct{ Stdout string }
		if err := json.Unmarshal(ReadFile(tb, m), &meta); err != nil {
			tb.Fatal(err)
		}
		outs = append(outs, meta.Stdout)
	}
	return outs
}

// Feed feeds out to p a line at a time and finishes it as a run of the
// program cli that printed stderr and exited with status exit.
func Feed(p modelcli.LineParser, cli string, out, stderr []byte, exit int) (modelcli.Response, error) {
	for line := range bytes.Lines(out) {
		p.Line(bytes.TrimSuffix(line, []byte("\n")))
	}
	var runErr error
	if exit != 0 {
		runErr = &proc.ExitError{Name: cli, Code: exit, StderrTail: stderr}
	}
	return p.Finish(runErr, stderr)
}

// AddSeeds adds every file matching the glob patterns to f's corpus.
func AddSeeds(f *testing.F, patterns ...string) {
	f.Helper()
	for _, p := range patterns {
		names, err := filepath.Glob(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range names {
			f.Add(ReadFile(f, name))
		}
	}
}

// Kinds returns the kinds of evs, each tool call's followed by ":" and
// its tool.
func Kinds(evs []modelcli.Event) []string {
	var out []string
	for _, e := range evs {
		k := e.Kind
		if e.Tool != "" {
			k += ":" + e.Tool
		}
		out = append(out, k)
	}
	return out
}

// ErrAny, as the error a test table wants, stands for any error.
var ErrAny = errors.New("clitest: any error")

// CheckErr checks err against what a test wants: success when wantIs is
// nil and wantMsg is ""; else an error that wraps wantIs (unless it is nil
// or ErrAny) and contains wantMsg.
func CheckErr(tb testing.TB, err, wantIs error, wantMsg string) {
	tb.Helper()
	switch {
	case wantIs == nil && wantMsg == "":
		if err != nil {
			tb.Fatalf("got error %v, want success", err)
		}
	case err == nil:
		tb.Fatalf("got success, want an error (%v) containing %q", wantIs, wantMsg)
	case wantIs != nil && wantIs != ErrAny && !errors.Is(err, wantIs):
		tb.Fatalf("got %v, want it to wrap %v", err, wantIs)
	case !strings.Contains(err.Error(), wantMsg):
		tb.Fatalf("got %q, want it to contain %q", err, wantMsg)
	}
}

// CheckResponse checks what every finished run must be, whatever the
// output: text or an error, never both nor neither; a last event that is
// EventCompleted or EventError; every event timed, its text within
// modelcli.MaxEventText and its data valid JSON.
func CheckResponse(tb testing.TB, resp modelcli.Response, err error) {
	tb.Helper()
	if (err == nil) == (resp.Text == "") {
		tb.Fatalf("got text %q and error %v: want exactly one", resp.Text, err)
	}
	if len(resp.Events) == 0 {
		tb.Fatal("no events: want at least the last")
	}
	if last := resp.Events[len(resp.Events)-1].Kind; last != modelcli.EventCompleted && last != modelcli.EventError {
		tb.Errorf("last event %s, want completed or error", last)
	}
	for _, e := range resp.Events {
		if e.Time.IsZero() || len(e.Text) > modelcli.MaxEventText || (e.Data != nil && !json.Valid(e.Data)) {
			tb.Errorf("event %+v: want a time, text within the cap and valid data", e)
		}
	}
}
