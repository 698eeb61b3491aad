package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// bobsWork leaves in root what bob's watcher would: two messages seen and
// claimed, one answered, one failed, a run that took 3s, and a heartbeat
// with a backlog a minute old.
func bobsWork(t *testing.T, root tree.Root) {
	t.Helper()
	now := time.Now().UTC()
	store := &claim.Store{Root: root, Self: claim.Self("bob")}
	for i, status := range []string{claim.Replied, claim.Failed} {
		id := channel.NewID("alice", now, []string{"a001", "a002"}[i])
		if err := delivery.MarkSeen(root, "dev", id, store.Self, now, "", "", nil); err != nil {
			t.Fatal(err)
		}
		if _, outcome, err := store.Acquire("dev", id); err != nil || outcome != claim.Acquired {
			t.Fatalf("acquire: %v %v", outcome, err)
		}
		if err := store.Finish("dev", id, status, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	failed := channel.Message{ID: channel.NewID("alice", now, "a002"), SessionID: "dev", From: "alice", To: "bob"}
	rp := &delivery.Reporter{Root: root, Agent: "bob", Host: "vm-1", Post: func(*channel.Message) error { return nil }}
	if _, err := rp.Send(&failed, delivery.Report{Agent: "bob", State: delivery.Failed, Reason: "exit 1"}); err != nil {
		t.Fatal(err)
	}
	start := now.Add(-3 * time.Second)
	rec, err := jobs.Start(root, jobs.Job{ID: jobs.NewID(), Agent: "bob", Channel: "dev", Message: "m", Started: start},
		func() time.Time { return start.Add(3 * time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	rec.Finish(jobs.Completed, modelcli.Response{Text: "ok"}, nil)
	if err := presence.Write(root, presence.Status{AgentID: "bob", State: presence.StateAwake, Substate: presence.SubIdle,
		Backlog: 1, OldestUnanswered: presence.FormatTime(now.Add(-time.Minute))}); err != nil {
		t.Fatal(err)
	}
}

// GET /metrics on collab serve is Prometheus text with the tree's
// figures per agent, behind the sign-in.
func TestMetrics(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Prometheus: true, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer telemetry.SetDefault(telemetry.SetDefault(tel))
	tel.NATSError(context.Background(), "publish")
	toks := Tokens{Path: filepath.Join(t.TempDir(), "tokens.json")}
	ts := newTestServer(t, Config{Tokens: toks})
	bobsWork(t, ts.root)

	code, body := ts.do(t, "GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	msgs := map[string]float64{}
	for _, m := range fams["collab_messages_total"].GetMetric() {
		if labelOf(m, "agent") == "bob" {
			msgs[labelOf(m, "state")] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"seen": 2, "claimed": 2, "answered": 1, "failed": 1, "reported": 1}
	for k, v := range want {
		if msgs[k] != v {
			t.Errorf("collab_messages_total{agent=bob,state=%s} = %v, want %v (all: %v)", k, msgs[k], v, msgs)
		}
	}
	runs := fams["collab_run_duration_seconds"]
	if runs.GetType() != dto.MetricType_HISTOGRAM || len(runs.GetMetric()) != 1 {
		t.Fatalf("collab_run_duration_seconds: %v", runs)
	}
	if h, m := runs.Metric[0].GetHistogram(), runs.Metric[0]; h.GetSampleCount() != 1 || h.GetSampleSum() < 2.9 || labelOf(m, "agent") != "bob" || labelOf(m, "outcome") != jobs.Completed {
		t.Errorf("run histogram %v", runs.Metric[0])
	}
	backlog := fams["collab_backlog_age_seconds"].GetMetric()
	if len(backlog) != 1 || labelOf(backlog[0], "agent") != "bob" || backlog[0].GetGauge().GetValue() < 59 {
		t.Errorf("collab_backlog_age_seconds: %v", backlog)
	}
	if ne := fams["collab_nats_errors_total"].GetMetric(); len(ne) != 1 || ne[0].GetCounter().GetValue() != 1 {
		t.Errorf("collab_nats_errors_total: %v", ne)
	}

	// Not signed in: refused; a person's token (a scrape config's
	// authorization) passes; an agent's does not.
	person, _, err := toks.New("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	agentTok, _, err := toks.NewAgent("bob", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer " + person, http.StatusOK}, {"Bearer " + agentTok, http.StatusForbidden}} {
		req := localRequest("GET", "/metrics")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		ts.Handler().ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("GET /metrics with %.12q: %d, want %d", c.auth, rec.Code, c.want)
		}
	}
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
