package main

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/telemetry/otlptest"
)

// A delegation person → a1 → a2 → a3, each agent a collab watch process
// whose model run delegates with collab send --wait, is one trace in an
// in-process OTLP receiver: the person's collab.send, then per hop the
// hop's span with its stage spans and the run's collab.send, each the
// child of the one before.
func TestTraceAcrossProcesses(t *testing.T) {
	rcv, tel := otlptest.Exporting(t, "collab-test")
	defer telemetry.SetDefault(telemetry.SetDefault(tel))

	root := newTree(t)
	var ws []*watcherProc
	for _, a := range []string{"a1", "a2", "a3"} {
		ws = append(ws, startWatcher(t, root, a, "dev", []string{"FAKE_CLI_DELEGATE=a1=a2,a2=a3", "OTEL_BSP_SCHEDULE_DELAY=50"}))
	}
	r := runCollab(t, map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}, "",
		"send", "--wait", "--agent", "human", "--to", "a1", "--poll", "50ms", "--timeout", "120s", "start the chain")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "a1 got: a2 got: ok ") {
		t.Fatalf("send --wait: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		w.stop(t, syscall.SIGTERM) // flushes its spans
	}

	spans := rcv.Spans()
	byID := map[string]otlptest.Span{}
	traces := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanID] = s
		traces[s.TraceID] = true
	}
	if len(traces) != 1 {
		t.Errorf("%d traces, want one", len(traces))
	}
	var chain []string
	for _, s := range spans {
		if !strings.HasPrefix(s.Name, "collab.hop ") {
			continue
		}
		send := byID[s.Parent]
		chain = append(chain, send.Service+" "+send.Name+" → "+s.Service+" "+s.Name)
		var stages []string
		for _, c := range spans {
			if c.Parent == s.SpanID {
				stages = append(stages, c.Name)
			}
		}
		for _, want := range []string{"collab.stage seen", "collab.stage claimed", "collab.stage run_started", "collab.stage replied"} {
			if !slices.Contains(stages, want) {
				t.Errorf("%s: no %s among %v", s.Name, want, stages)
			}
		}
	}
	slices.Sort(chain)
	t.Logf("%d spans; hops %q", len(spans), chain)
	want := []string{
		"collab-send collab.send → collab-watch collab.hop agent=a2",
		"collab-send collab.send → collab-watch collab.hop agent=a3",
		"collab-test collab.send → collab-watch collab.hop agent=a1",
	}
	if !slices.Equal(chain, want) {
		t.Errorf("hops, each after the send that made its message:\n got %q\nwant %q", chain, want)
	}
	// The runs' sends are the children of the hops that ran them.
	for _, s := range spans {
		if s.Name == "collab.send" && s.Service == "collab-send" && !strings.HasPrefix(byID[s.Parent].Name, "collab.hop agent=a") {
			t.Errorf("a run's collab.send is the child of %q, not of a hop", byID[s.Parent].Name)
		}
	}
}
