package watcher_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/telemetry/otlptest"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/watcher"
)

// A delegation alice → bob → carol, and carol's reply back to bob, is one
// trace: alice's send, bob's hop, bob's send to carol (from the run's
// TRACEPARENT), carol's hop, then bob's hop for carol's reply (from the
// reply's traceparent), each hop with its stage spans, collected by an
// in-process OTLP receiver.
func TestTraceDelegationChain(t *testing.T) {
	rcv, tel := otlptest.Exporting(t, "collab-test")
	root := tree.Root(t.TempDir())
	bob := &fakeRunner{}
	bob.reply = func(c runCall) (modelcli.Response, error) {
		if c.env("COLLAB_FROM") == "carol" {
			return modelcli.Response{Text: watcher.NoReply}, nil
		}
		ctx := telemetry.FromEnv(context.Background(), c.env)
		ctx, span := tel.Tracer().Start(ctx, "collab.send")
		m := channel.Message{SessionID: chName, From: "bob", To: "carol", Content: channel.Content{Text: "please"}}
		telemetry.Inject(ctx, &m)
		post(t, root, m)
		span.End()
		return modelcli.Response{Text: "asked carol"}, nil
	}
	carol := &fakeRunner{}
	var hs []*harness
	for name, r := range map[string]*fakeRunner{"bob": bob, "carol": carol} {
		cfg := config(root, r)
		cfg.Agent, cfg.Telemetry = name, tel
		hs = append(hs, start(t, cfg))
	}

	ctx, span := tel.Tracer().Start(context.Background(), "collab.send")
	first := channel.Message{To: "bob", Content: channel.Content{Text: "do it"}}
	telemetry.Inject(ctx, &first)
	first = post(t, root, first)
	span.End()
	want := span.SpanContext().TraceID().String()

	// bob answers alice, carol answers bob, bob's hop for carol's reply ends.
	waitFor(t, "bob's second run and carol's reply", func() bool {
		return len(bob.Calls()) == 2 && len(carol.Calls()) == 1 && len(repliesTo(messages(t, root), first.ID)) == 1
	})
	waitFor(t, "bob to finish carol's reply", func() bool {
		return readClaimStatus(t, root, "bob", carol) == "skipped"
	})
	for _, h := range hs {
		h.stop() // the span of a hop ends just after its claim
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	spans := rcv.Spans()
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
		if s.TraceID != want {
			t.Errorf("span %s in trace %s, want %s", s.Name, s.TraceID, want)
		}
	}
	var hops []otlptest.Span
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "collab.hop ") {
			hops = append(hops, s)
		}
	}
	var names []string
	for _, h := range hops {
		names = append(names, h.Name+"<-"+byID[h.Parent].Name)
		stages := map[string]bool{}
		for _, s := range spans {
			if s.Parent == h.SpanID && strings.HasPrefix(s.Name, "collab.stage ") {
				stages[strings.TrimPrefix(s.Name, "collab.stage ")] = true
			}
		}
		for _, st := range []string{"seen", "claimed"} {
			if !stages[st] {
				t.Errorf("%s: no stage span %q (has %v)", h.Name, st, stages)
			}
		}
		if h.Attrs["collab.status"] == "replied" && !stages["replied"] {
			t.Errorf("%s: no stage span replied (has %v)", h.Name, stages)
		}
	}
	t.Logf("hops: %v (%d spans)", names, len(spans))
	wantHops := []string{"collab.hop agent=bob<-collab.send", "collab.hop agent=carol<-collab.send", "collab.hop agent=bob<-collab.hop agent=carol"}
	for _, w := range wantHops {
		if !slices.Contains(names, w) {
			t.Errorf("no hop %s among %v", w, names)
		}
	}
	if len(hops) != 3 {
		t.Errorf("%d hop spans, want 3: %v", len(hops), names)
	}
}

// readClaimStatus is the status of agent's claim of the message r answered
// first ("" when none).
func readClaimStatus(t *testing.T, root tree.Root, agent string, r *fakeRunner) string {
	calls := r.Calls()
	if len(calls) == 0 {
		return ""
	}
	// carol's reply is the message in reply to the one carol was called for.
	for _, m := range messages(t, root) {
		if m.From == "carol" && m.Metadata.InReplyTo == calls[0].msgID() {
			c, err := readClaim(root, agent, m.Key())
			if err == nil {
				return c.Status
			}
		}
	}
	return ""
}

// Without telemetry (no exporter), a reply carries no trace context and a
// run gets no TRACEPARENT, even when the message carries one.
func TestNoTraceWithoutTelemetry(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	tel, err := telemetry.New(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := tree.Root(t.TempDir())
	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.Telemetry = tel
	start(t, cfg)
	m := channel.Message{To: agent, Content: channel.Content{Text: "hi"}}
	m.SetExtension(telemetry.ExtTraceParent, []byte(`"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`))
	m = post(t, root, m)
	replies := repliesTo(waitReplies(t, root, m.ID), m.ID)
	if _, ok := replies[0].Metadata.Extra[telemetry.ExtTraceParent]; ok {
		t.Errorf("reply carries a traceparent: %v", replies[0].Metadata.Extra)
	}
	if tp := r.Calls()[0].env(telemetry.EnvTraceParent); tp != "" {
		t.Errorf("run got TRACEPARENT=%s", tp)
	}
}
