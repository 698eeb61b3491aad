package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

func TestFigure(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		spec   spec
		runs   []float64
		err    error
		value  float64 // want, unless noVal
		noVal  bool
		result string
	}{
		{name: "pass", spec: spec{max: 5}, runs: []float64{4, 9, 1}, value: 4, result: resultPass},
		{name: "at the target", spec: spec{max: 5}, runs: []float64{5}, value: 5, result: resultPass},
		{name: "fail", spec: spec{max: 5}, runs: []float64{6, 5.5, 7}, value: 6, result: resultFail},
		{name: "even count", spec: spec{max: 5}, runs: []float64{1, 2, 4, 8}, value: 3, result: resultPass},
		{name: "no target", spec: spec{}, runs: []float64{120}, value: 120, result: resultNone},
		{name: "error after a run", spec: spec{max: 5}, runs: []float64{1}, err: boom, value: 1, result: resultError},
		{name: "error at once", spec: spec{max: 5}, err: boom, noVal: true, result: resultError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.spec.figure(tt.runs, tt.err)
			if f.Result != tt.result {
				t.Errorf("result = %q, want %q", f.Result, tt.result)
			}
			switch {
			case tt.noVal && f.Value != nil:
				t.Errorf("value = %v, want none", *f.Value)
			case !tt.noVal && (f.Value == nil || *f.Value != tt.value):
				t.Errorf("value = %v, want %v", f.Value, tt.value)
			}
			if (f.Error != "") != (tt.err != nil) {
				t.Errorf("error = %q, want %v", f.Error, tt.err)
			}
		})
	}
}

func TestTableAndJSON(t *testing.T) {
	figs := []Figure{
		spec{name: "latency p50", unit: "ms", max: 5}.figure([]float64{3.456}, nil),
		spec{name: "backlog", unit: "s", max: 5}.figure([]float64{7.2}, nil),
		spec{name: "throughput", unit: "msgs/s"}.figure([]float64{1234.4}, nil),
		spec{name: "nats", unit: "ms", max: 20}.figure(nil, errors.New("bindfs: not found")),
	}
	var buf bytes.Buffer
	if err := writeTable(&buf, figs); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := [][]string{
		{"FIGURE", "VALUE", "TARGET", "RESULT"},
		{"latency p50", "3.46 ms", "≤ 5 ms", "pass"},
		{"backlog", "7.20 s", "≤ 5 s", "FAIL"},
		{"throughput", "1234 msgs/s", "-", "-"},
		{"nats", "-", "≤ 20 ms", "ERROR: bindfs: not found"},
	}
	if len(got) != len(want) {
		t.Fatalf("table has %d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, cells := range want {
		for _, c := range cells {
			if !strings.Contains(got[i], c) {
				t.Errorf("line %d %q lacks %q", i, got[i], c)
			}
		}
	}

	path := filepath.Join(t.TempDir(), "bench.json")
	rep := &Report{Runs: 1, Figures: figs}
	rep.count()
	if err := writeJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	var back Report
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Failures != 1 || back.Errors != 1 || len(back.Figures) != 4 {
		t.Errorf("read back %d failures, %d errors, %d figures; want 1, 1, 4", back.Failures, back.Errors, len(back.Figures))
	}
	if !strings.Contains(string(data), `"target_max": null`) || !strings.Contains(string(data), `"value": null`) {
		t.Errorf("missing target and value should be null:\n%s", data)
	}
}

func TestPercentileAndMedian(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(ds, 50); got != 50*time.Millisecond {
		t.Errorf("p50 = %v, want 50ms", got)
	}
	if got := percentile(ds, 99); got != 99*time.Millisecond {
		t.Errorf("p99 = %v, want 99ms", got)
	}
	if got := percentile(ds[:10], 99); got != 10*time.Millisecond {
		t.Errorf("p99 of 10 = %v, want the largest", got)
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median = %v, want 2", got)
	}
}

func TestProcFiles(t *testing.T) {
	if _, err := cpuTicks(os.Getpid()); err != nil {
		t.Errorf("cpuTicks: %v", err)
	}
	if kb, err := statusKB(os.Getpid(), "VmRSS"); err != nil || kb <= 0 {
		t.Errorf("statusKB = %d, %v", kb, err)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-only", "nope"}, {"-runs", "-1"}, {"extra"}, {"-bogus"}} {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &out, &errb)
		if code := exitCode(err, &errb); code != 2 {
			t.Errorf("%q: exit %d (%v), want 2", args, code, err)
		}
	}
}

// TestQuickLatency runs -quick's cheapest part end to end: local latency,
// in-process, needing neither bindfs nor a collab build.
func TestQuickLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for a few seconds")
	}
	t.Setenv("TMPDIR", t.TempDir()) // the bench's os.MkdirTemp
	path := filepath.Join(t.TempDir(), "out.json")
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"-quick", "-only", "latency-local", "-json", path}, func(string) string { return "" }, &out, &errb)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Figures) != 2 || rep.Errors != 0 {
		t.Fatalf("%d figures, %d errors; want 2, 0:\n%s", len(rep.Figures), rep.Errors, data)
	}
	checkFigures(t, rep.Figures, out.String())
	if entries, _ := os.ReadDir(os.Getenv("TMPDIR")); len(entries) != 0 {
		t.Errorf("temp folder left behind: %v", entries)
	}
}

// TestBacklogSmall measures the backlog figures over a small channel.
func TestBacklogSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a watcher")
	}
	b := &bench{dir: t.TempDir(), runs: 2, size: sizes{backlog: 500}, progress: io.Discard}
	figs := b.backlog(context.Background())
	if len(figs) != 2 {
		t.Fatalf("%d figures, want 2", len(figs))
	}
	var buf bytes.Buffer
	writeTable(&buf, figs)
	checkFigures(t, figs, buf.String())
}

func checkFigures(t *testing.T, figs []Figure, table string) {
	t.Helper()
	for _, f := range figs {
		if f.Value == nil || f.Error != "" || !strings.Contains(table, f.Name) {
			t.Errorf("figure %q: value %v, error %q, in table: %v", f.Name, f.Value, f.Error, strings.Contains(table, f.Name))
		}
	}
	t.Logf("\n%s", table)
}

// TestSignSmall measures the sign part with few messages.
func TestSignSmall(t *testing.T) {
	b := &bench{dir: t.TempDir(), runs: 1, size: sizes{signSmall: 20, signLarge: 2}, progress: io.Discard}
	figs := b.sign(context.Background())
	if len(figs) != 6 {
		t.Fatalf("%d figures, want 6", len(figs))
	}
	var buf bytes.Buffer
	writeTable(&buf, figs)
	checkFigures(t, figs, buf.String())
}

// TestFixturesSigned checks that every message of the backlog and big
// channel fixtures, and every heartbeat of the presence fixture, verifies
// against the fixture's own keyring.
func TestFixturesSigned(t *testing.T) {
	b := &bench{dir: t.TempDir(), runs: 1, size: sizes{backlog: 300, bigSmall: 200, bigLarge: 2}, progress: io.Discard}
	backlog, err := b.backlogFixture()
	if err != nil {
		t.Fatal(err)
	}
	big, err := b.bigFixture()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		root tree.Root
		want int
	}{{backlog, 301}, {big, 202}} {
		r, err := channel.NewReader(c.root, backlogChannel, channel.Cursor{}, channel.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		msgs, _, err := r.Scan()
		if err != nil || len(msgs) != c.want {
			t.Fatalf("%s: %d messages, %v; want %d", c.root, len(msgs), err, c.want)
		}
		v := signing.NewVerifier(keyring.Open(c.root.Keys()))
		for i := range msgs {
			if got := msgs[i].Verify(v, backlogChannel); got != signing.Verified {
				t.Fatalf("%s: %s from %s: %v, want verified", c.root, msgs[i].ID, msgs[i].From, got)
			}
		}
	}
	who, err := b.presenceFixture(30)
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := presence.ReadAll(who)
	if err != nil || len(all) != 30 {
		t.Fatalf("presence: %d heartbeats, %v; want 30", len(all), err)
	}
	for i, got := range presence.VerifyAll(signing.NewVerifier(keyring.Open(who.Keys())), all) {
		if got != signing.Verified {
			t.Errorf("heartbeat of %s: %v, want verified", all[i].AgentID, got)
		}
	}
}
