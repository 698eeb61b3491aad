package main

import (
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/testsupport/natstest"
)

// TestNATSInitReplicas: nats init --replicas 3 given the three nodes of a
// cluster makes an R3 stream and says where it lives; a count out of range
// is a usage error; more than one replica on a single server is refused.
func TestNATSInitReplicas(t *testing.T) {
	c := natstest.StartCluster(t, nil)
	env := map[string]string{"COLLAB_ROOT": newTree(t), "NATS_URL": c.URLs()}
	r := runCollab(t, env, "", "nats", "init", "--replicas", "3")
	if r.code != 0 || !strings.Contains(r.stdout, "created stream CHAT") || !strings.Contains(r.stdout, "replicas 3 on cluster "+natstest.ClusterName) {
		t.Fatalf("nats init --replicas 3: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r = runCollab(t, env, "", "nats", "init", "--replicas", "7"); r.code != exitUsage || !strings.Contains(r.stderr, "replicas must be from 1 to 5") {
		t.Errorf("nats init --replicas 7: exit %d, %q", r.code, r.stderr)
	}
	env["NATS_URL"] = natsServer(t)
	if r = runCollab(t, env, "", "nats", "init", "--replicas", "3"); r.code == 0 || !strings.Contains(r.stderr, "single server") {
		t.Errorf("nats init --replicas 3 on a single server: exit %d, %q", r.code, r.stderr)
	}
	env["NATS_URL"] = c.URLs() + ",nats//bad"
	if r = runCollab(t, env, "", "nats", "init"); r.code != exitUsage || !strings.Contains(r.stderr, `"nats//bad"`) {
		t.Errorf("nats init with a bad URL in NATS_URL: exit %d, %q", r.code, r.stderr)
	}
}
