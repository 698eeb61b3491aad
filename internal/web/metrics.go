package web

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// GET /metrics is Prometheus text, behind the same sign-in as the API: a
// session, or a person's bearer token (collab serve token new), which is
// what a Prometheus scrape config's authorization sends. collab serve
// runs no watcher, so the per-agent figures come from the tree, read at
// scrape at most every MetricsTTL and cut at maxMetricFiles claim files
// and job records:
//
//	collab_messages_total{agent,state}       messages seen, claimed, answered, failed, skipped, reported (claims, seen files, report marks)
//	collab_run_duration_seconds{agent,outcome} model runs that ended (job records), outcome their status
//	collab_backlog_age_seconds{agent}        age of the oldest message an awake watcher has not answered (its heartbeat)
//	collab_metrics_truncated                 1 when a scrape stopped at maxMetricFiles
//
// followed by the process's own instruments (package telemetry), such as
// collab_nats_errors_total.

// MetricsTTL is how long a scrape's tree figures are served again.
const MetricsTTL = 10 * time.Second

// maxMetricFiles bounds the claim files and job records a scrape reads.
const maxMetricFiles = 50000

var (
	descMessages  = prometheus.NewDesc("collab_messages_total", "Messages per agent and state, from the tree (claims and seen files).", []string{"agent", "state"}, nil)
	descRuns      = prometheus.NewDesc("collab_run_duration_seconds", "Duration of the model runs that ended, from the job records.", []string{"agent", "outcome"}, nil)
	descBacklog   = prometheus.NewDesc("collab_backlog_age_seconds", "Age of the oldest message an awake watcher has not answered, from its heartbeat.", []string{"agent"}, nil)
	descTruncated = prometheus.NewDesc("collab_metrics_truncated", "1 when the last scrape of the tree stopped at its bound.", nil, nil)
	runBuckets    = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}
)

// treeMetrics is a prometheus.Collector of the tree's figures.
type treeMetrics struct {
	root tree.Root
	now  func() time.Time

	mu     sync.Mutex
	at     time.Time
	cached []prometheus.Metric
}

func (c *treeMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMessages, descRuns, descBacklog, descTruncated} {
		ch <- d
	}
}

func (c *treeMetrics) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.cached == nil || now.Sub(c.at) >= MetricsTTL || now.Before(c.at) {
		c.cached, c.at = c.gather(now), now
	}
	for _, m := range c.cached {
		ch <- m
	}
}

// gather reads the tree's figures.
func (c *treeMetrics) gather(now time.Time) []prometheus.Metric {
	budget := maxMetricFiles
	var out []prometheus.Metric
	for k, n := range c.messages(&budget) {
		out = append(out, prometheus.MustNewConstMetric(descMessages, prometheus.CounterValue, float64(n), k[0], k[1]))
	}
	out = append(out, c.runs(&budget)...)
	rows, _ := delivery.Who(c.root, nil, now, 0, "", func(string) {})
	for _, r := range rows {
		if r.Status == nil {
			continue
		}
		age := 0.0
		if t, ok := delivery.OldestUnanswered(*r.Status); ok {
			age = max(now.Sub(t).Seconds(), 0)
		}
		out = append(out, prometheus.MustNewConstMetric(descBacklog, prometheus.GaugeValue, age, r.Agent))
	}
	truncated := 0.0
	if budget <= 0 {
		truncated = 1
	}
	return append(out, prometheus.MustNewConstMetric(descTruncated, prometheus.GaugeValue, truncated))
}

// messages counts, per agent and state, the messages of the claims
// folders: ROOT/claims/CHANNEL/AGENT/M.seen (seen), M.report (reported:
// a delivery report went to M's sender), and M's claim (claimed, and
// answered, failed or skipped by its status).
func (c *treeMetrics) messages(budget *int) map[[2]string]int {
	counts := map[[2]string]int{}
	chans, _ := os.ReadDir(filepath.Dir(c.root.Claims("x")))
	for _, chd := range chans {
		ch := chd.Name()
		if !chd.IsDir() || !tree.ValidName(ch) {
			continue
		}
		agents, _ := os.ReadDir(c.root.Claims(ch))
		for _, ad := range agents {
			agent := ad.Name()
			if !ad.IsDir() || !tree.ValidName(agent) || *budget <= 0 {
				continue
			}
			c.agentMessages(ch, agent, counts, budget)
		}
	}
	return counts
}

// agentMessages counts the messages of one claims folder.
func (c *treeMetrics) agentMessages(ch, agent string, counts map[[2]string]int, budget *int) {
	files, _ := os.ReadDir(c.root.AgentClaims(ch, agent))
	store := &claim.Store{Root: c.root, Self: claim.Owner{Agent: agent}}
	claimed := map[string]bool{}
	for _, f := range files {
		name := f.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		id, kind, _ := strings.Cut(name, ".")
		switch {
		case kind == delivery.KindSeen:
			counts[[2]string{agent, telemetry.StateSeen}]++
		case kind == delivery.KindReport:
			counts[[2]string{agent, telemetry.StateReported}]++
		case (kind == "json" || strings.HasSuffix(kind, ".json")) && !claimed[id]:
			claimed[id] = true
			if *budget--; *budget < 0 {
				return
			}
			counts[[2]string{agent, telemetry.StateClaimed}]++
			cl, err := store.Read(ch, id)
			if err != nil {
				continue
			}
			switch cl.Status {
			case claim.Replied:
				counts[[2]string{agent, telemetry.StateAnswered}]++
			case claim.Failed:
				counts[[2]string{agent, telemetry.StateFailed}]++
			case claim.Skipped:
				counts[[2]string{agent, telemetry.StateSkipped}]++
			}
		}
	}
}

// runs is the histogram of the ended runs' durations per agent and
// outcome, from the job records.
func (c *treeMetrics) runs(budget *int) []prometheus.Metric {
	all, _ := jobs.ListAll(c.root)
	type hist struct {
		count   uint64
		sum     float64
		buckets map[float64]uint64
	}
	hs := map[[2]string]*hist{}
	for _, j := range all {
		if *budget--; *budget < 0 {
			break
		}
		if j.Ended.IsZero() || j.Status == jobs.Running {
			continue
		}
		k := [2]string{j.Agent, j.Status}
		h := hs[k]
		if h == nil {
			h = &hist{buckets: map[float64]uint64{}}
			hs[k] = h
		}
		d := max(j.Ended.Sub(j.Started).Seconds(), 0)
		h.count++
		h.sum += d
		for _, b := range runBuckets {
			if d <= b {
				h.buckets[b]++
			}
		}
	}
	var out []prometheus.Metric
	for k, h := range hs {
		out = append(out, prometheus.MustNewConstHistogram(descRuns, h.count, h.sum, h.buckets, k[0], k[1]))
	}
	return out
}

// metricsHandler serves the tree's figures and the process's instruments.
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&treeMetrics{root: s.cfg.Root, now: time.Now})
	gs := prometheus.Gatherers{reg}
	if g := telemetry.Default().Gatherer(); g != nil {
		gs = append(gs, g)
	}
	return promhttp.HandlerFor(gs, promhttp.HandlerOpts{})
}
