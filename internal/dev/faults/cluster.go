package main

// Scenarios 24 and 25: a three-node NATS cluster (each node this binary
// re-executed as __nats with a cluster port and routes to the other two,
// JetStream on, a store of its own) and the stream CHAT with three
// replicas. Two remote senders and a remote watcher of the agent (which
// answers them) and one bridge are given all three client URLs. 24: the
// node that leads the stream is SIGKILLed a third into a remote burst and
// never comes back. 25: the leader is SIGSTOPped for 8 s mid-burst (cut
// off from everyone: routes and clients) and SIGCONTed. Scored by
// clusterVerdict: every send on the mount once (remoteVerdict) and every
// one answered once (claimScore).

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// clusterName is the cluster of the __nats nodes.
const clusterName = "collab-faults"

// natsCluster is three __nats nodes routed to each other.
type natsCluster struct {
	e      *env
	names  []string
	ports  []int // client ports
	cports []int // cluster (route) ports
	stores []string
	nodes  []*natsProc
}

// newCluster starts n nodes and waits until each accepts clients.
func newCluster(ctx context.Context, e *env, n int) (*natsCluster, error) {
	c := &natsCluster{e: e}
	for i := range n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		c.names = append(c.names, "n"+strconv.Itoa(i))
		c.ports, c.cports = append(c.ports, p), append(c.cports, cp)
		c.stores = append(c.stores, filepath.Join(e.dir, "nats-n"+strconv.Itoa(i)))
	}
	c.nodes = make([]*natsProc, n)
	for i := range n {
		if err := c.start(ctx, i); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// start starts node i (again) on its ports and store.
func (c *natsCluster) start(ctx context.Context, i int) error {
	var routes []string
	for j, cp := range c.cports {
		if j != i {
			routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", cp))
		}
	}
	p, err := c.e.startNATS(ctx, c.ports[i], c.stores[i], "--name", c.names[i],
		"--cluster-port", strconv.Itoa(c.cports[i]), "--routes", strings.Join(routes, ","))
	if err != nil {
		return fmt.Errorf("node %s: %w", c.names[i], err)
	}
	c.nodes[i] = p
	return nil
}

// urls is every node's client URL, comma-separated (as --nats takes it).
func (c *natsCluster) urls() string {
	var us []string
	for _, p := range c.ports {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(us, ",")
}

func (c *natsCluster) close() {
	for _, p := range c.nodes {
		if p != nil {
			p.kill()
		}
	}
}

// stream connects to the cluster and returns the stream's info: its
// leader and replicas.
func (c *natsCluster) stream(ctx context.Context) (*jetstream.StreamInfo, error) {
	nc, err := nats.Connect(c.urls(), nats.Timeout(2*time.Second), nats.MaxReconnects(0))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, natsbus.StreamName)
	if err != nil {
		return nil, err
	}
	return s.Info(ctx)
}

// leader waits (up to 30 s) until the stream has a leader with every
// other replica current, and returns the leader's index.
func (c *natsCluster) leader(ctx context.Context, want int) (int, error) {
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		info, err := c.stream(ctx)
		switch {
		case err != nil:
			last = err.Error()
		case info.Cluster == nil || info.Cluster.Leader == "":
			last = "no leader"
		default:
			current := 0
			for _, p := range info.Cluster.Replicas {
				if p.Current && !p.Offline {
					current++
				}
			}
			if i := slices.Index(c.names, info.Cluster.Leader); i >= 0 && current >= want-1 {
				return i, nil
			}
			last = fmt.Sprintf("leader %s, %d replicas current", info.Cluster.Leader, current)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return -1, err
		}
	}
	return -1, fmt.Errorf("the stream has no leader with %d current replicas after 30 s: %s", want-1, last)
}

// replicate waits until the stream's replicas (made by `collab nats init
// --replicas 3`) are current.
func (c *natsCluster) replicate(ctx context.Context) error {
	info, err := c.stream(ctx)
	if err != nil {
		return err
	}
	if n := info.Config.Replicas; n != len(c.nodes) {
		return fmt.Errorf("collab nats init --replicas %d made a stream of %d replicas", len(c.nodes), n)
	}
	_, err = c.leader(ctx, len(c.nodes))
	return err
}

// clusterRun starts the cluster, the stream with three replicas, one
// bridge and the agent's remote watcher, all given the three URLs.
func clusterRun(ctx context.Context, e *env) (*natsCluster, *remoteRun, error) {
	c, err := newCluster(ctx, e, 3)
	if err != nil {
		return nil, nil, err
	}
	r := &remoteRun{e: e, absent: filepath.Join(e.dir, "no-such-mount"), bridges: make(map[string]*watchProc)}
	r.url, r.sendURL = c.urls(), c.urls()
	r.initArgs = []string{"--replicas", strconv.Itoa(len(c.nodes))}
	fail := func(err error) (*natsCluster, *remoteRun, error) { c.close(); return nil, nil, err }
	// Two senders, a send each 0.4-0.8 s: within what one remote watcher
	// answers (about 5 a second), so the time to recover is the fault's.
	r.gap = [2]time.Duration{400 * time.Millisecond, 800 * time.Millisecond}
	if err := r.setup(ctx, 2); err != nil {
		return fail(err)
	}
	if err := c.replicate(ctx); err != nil {
		return fail(err)
	}
	key, err := agentKey(e)
	if err != nil {
		return fail(err)
	}
	if err := r.startBridge(ctx, "bridge"); err != nil {
		return fail(err)
	}
	base := watchOpts{delay: 100 * time.Millisecond, jitter: 200 * time.Millisecond, poll: time.Second,
		env: []string{"COLLAB_KEY=" + key}}
	if _, err := e.startWatcher(ctx, remoteWatch(base, r, r.url), true); err != nil {
		return fail(err)
	}
	return c, r, nil
}

// clusterFault (scenario 24, stop false: the leader SIGKILLed for good;
// 25, stop true: the leader SIGSTOPped for 8 s).
func clusterFault(stop bool) func(ctx context.Context, e *env) error {
	return func(ctx context.Context, e *env) error {
		c, r, err := clusterRun(ctx, e)
		if err != nil {
			return err
		}
		defer c.close()
		tag := map[bool]string{false: "s24", true: "s25"}[stop]
		d := time.Duration(e.size(12, 9)) * time.Second
		done := r.burst(ctx, tag, d)
		if err := sleep(ctx, d/3); err != nil {
			return err
		}
		lead, err := c.leader(ctx, 3)
		if err != nil {
			return err
		}
		node := c.nodes[lead]
		if !stop {
			node.cmd.Process.Signal(syscall.SIGKILL)
			e.heal() // never heals: measured from the kill
			e.logf("stream leader %s SIGKILLed for good", c.names[lead])
		} else {
			node.cmd.Process.Signal(syscall.SIGSTOP)
			e.logf("stream leader %s SIGSTOPped (partitioned) for 8 s", c.names[lead])
		}
		t0 := time.Now()
		next, err := c.newLeader(ctx, lead)
		if err != nil {
			return err
		}
		e.note("stream leader %s %s %v into the burst; %s led the stream %v later",
			c.names[lead], map[bool]string{false: "SIGKILLed for good", true: "SIGSTOPped for 8 s"}[stop], (d / 3).Round(time.Second),
			c.names[next], time.Since(t0).Round(10*time.Millisecond))
		if stop {
			if err := sleep(ctx, time.Until(t0.Add(8*time.Second))); err != nil {
				return err
			}
			node.cmd.Process.Signal(syscall.SIGCONT)
			e.heal()
			e.logf("%s SIGCONTed", c.names[lead])
		}
		if err := <-done; err != nil {
			return err
		}
		if err := r.flush(ctx); err != nil {
			return err
		}
		var sent, queued, held int
		for _, s := range r.senders {
			sent, queued, held = sent+len(s.sends), queued+s.queued, held+len(s.snapshot)
		}
		e.note("%d remote sends given the three URLs: %d queued (exit 5), %d left in the outboxes for the final flush", sent, queued, held)
		if err := ackSends(e, r); err != nil {
			return err
		}
		return e.await(ctx, 75*time.Second, 3*time.Second)
	}
}

// newLeader waits until the stream is led by a node other than old.
func (c *natsCluster) newLeader(ctx context.Context, old int) (int, error) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if info, err := c.stream(ctx); err == nil && info.Cluster != nil {
			if i := slices.Index(c.names, info.Cluster.Leader); i >= 0 && i != old {
				return i, nil
			}
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return -1, err
		}
	}
	return -1, fmt.Errorf("no new stream leader within 30 s of losing %s", c.names[old])
}

// ackSends makes every message of the remote senders on the mount an ack
// (its time the message's): the remote watcher must answer each once.
func ackSends(e *env, r *remoteRun) error {
	msgs, _, err := channel.ReadAll(tree.Root(e.backing), chanName, channel.ReaderOptions{})
	if err != nil {
		return err
	}
	from := make(map[string]bool)
	for _, s := range r.senders {
		from[s.agent] = true
	}
	for _, m := range msgs {
		if from[m.From] {
			e.acks.add(ack{ID: m.ID, Text: m.Content.Text, At: m.Time()})
		}
	}
	return nil
}

// clusterVerdict: remoteVerdict (every send on the mount once, with its
// text and id) and claimVerdict (every one answered once, signed), summed.
func clusterVerdict(e *env) (verdict, error) {
	v, err := remoteVerdict(e)
	if err != nil {
		return v, err
	}
	a, err := claimVerdict(e)
	if err != nil {
		return v, err
	}
	v.Lost += a.Lost
	v.Duplicated += a.Duplicated
	v.Corrupt += a.Corrupt
	v.MaxLatency, v.P50Latency = a.MaxLatency, a.P50Latency
	if a.Last.After(v.Last) {
		v.Last = a.Last
	}
	v.answers = append(v.answers, a.answers...)
	for _, d := range a.Details {
		v.Details = append(v.Details, "answer "+d)
	}
	return v, nil
}
