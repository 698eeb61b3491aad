package natstest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ClusterSize is the number of nodes of a [Cluster].
const ClusterSize = 3

// ClusterName is the name of a [Cluster]'s nats cluster.
const ClusterName = "collab-test"

// clusterReady is how long StartCluster and WaitReady wait for the
// cluster to elect its JetStream meta leader.
const clusterReady = 30 * time.Second

// Cluster is an embedded three-node JetStream cluster on 127.0.0.1: nodes
// nats-1, nats-2 and nats-3 (indexes 0 to 2), each with its own client
// port, a route to each of the others on fixed ports, and its JetStream
// store in a t.TempDir. A node stopped and started again keeps its ports,
// its name and its store, as a real node restarted by systemd. Every node
// is shut down when the test ends.
type Cluster struct {
	t     testing.TB
	nodes []*Server
}

// StartCluster starts the three nodes and returns when the cluster has a
// JetStream meta leader and every node is current. mutate, if set, adjusts
// each node's options first (auth, TLS); it must keep the cluster block.
func StartCluster(t testing.TB, mutate func(*server.Options)) *Cluster {
	t.Helper()
	ports := freePorts(t, ClusterSize)
	c := &Cluster{t: t}
	for i := range ClusterSize {
		var routes []*url.URL
		for j, p := range ports {
			if j != i {
				routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
			}
		}
		o := server.Options{
			ServerName: nodeName(i), Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
			JetStream: true, StoreDir: t.TempDir(),
			Cluster: server.ClusterOpts{Name: ClusterName, Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		}
		if mutate != nil {
			mutate(&o)
		}
		// Start does not wait for the other nodes: the routes and the meta
		// group form once all three run.
		c.nodes = append(c.nodes, startServer(t, o))
	}
	c.WaitReady()
	return c
}

func nodeName(i int) string { return fmt.Sprintf("nats-%d", i+1) }

// freePorts returns n ports that were free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// Node returns node i (0 to 2): Stop, Start and Restart it, or look at it
// with Raw.
func (c *Cluster) Node(i int) *Server { return c.nodes[i] }

// NodeName returns node i's server name: nats-1 to nats-3.
func (c *Cluster) NodeName(i int) string { return nodeName(i) }

// URLs returns every node's client URL, comma-separated: the form of
// --nats and NATS_URL.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Index returns the index of the node whose client URL or server name is
// s, or -1.
func (c *Cluster) Index(s string) int {
	for i, n := range c.nodes {
		if s == n.URL() || s == nodeName(i) || strings.TrimPrefix(s, "nats://") == strings.TrimPrefix(n.URL(), "nats://") {
			return i
		}
	}
	return -1
}

// WaitReady waits until the running nodes agree on a JetStream meta leader,
// each is current, and the leader counts every running node as an online
// peer (so a stream can be placed on them), failing the test after 30 s.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	c.waitFor("JetStream meta leader seeing every running node", func() bool {
		running, leaders, peers := 0, 0, 0
		for _, n := range c.nodes {
			s := n.Raw()
			if s == nil {
				continue
			}
			running++
			if !s.JetStreamIsCurrent() {
				return false
			}
			if s.JetStreamIsLeader() {
				leaders++
				peers = len(s.JetStreamClusterPeers()) // online, with JetStream, stats received
			}
		}
		return leaders == 1 && peers == running
	})
}

// StreamLeader returns the index of the running node that leads the
// stream of the global account (the one of a server without accounts), or
// -1 when none does now.
func (c *Cluster) StreamLeader(stream string) int {
	return c.AccountStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream)
}

// AccountStreamLeader is StreamLeader for the stream of an account.
func (c *Cluster) AccountStreamLeader(account, stream string) int {
	for i, n := range c.nodes {
		if s := n.Raw(); s != nil && s.JetStreamIsStreamLeader(account, stream) {
			return i
		}
	}
	return -1
}

// WaitStreamLeader waits until a running node leads the stream of the
// global account and returns its index, failing the test after 30 s.
func (c *Cluster) WaitStreamLeader(stream string) int {
	c.t.Helper()
	leader := -1
	c.waitFor("a leader of stream "+stream, func() bool {
		leader = c.StreamLeader(stream)
		return leader >= 0
	})
	return leader
}

// waitFor polls cond until it holds, failing the test after clusterReady.
func (c *Cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(clusterReady)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: cluster: no %s after %v", what, clusterReady)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not waiting a fixed time
	}
}
