package natsbus_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// TestKillRequests: a kill request published for an agent reaches that
// agent's subscription (and no other's) with its job id; garbage on the
// subject is rejected and counted; bad names are refused before anything
// is sent.
func TestKillRequests(t *testing.T) {
	s := startServer(t, false, nil)
	pub, _ := connect(t, natsbus.Options{URL: s.URL()})
	sub, _ := connect(t, natsbus.Options{URL: s.URL()})
	got := make(chan string, 10)
	other := make(chan string, 10)
	k, err := sub.SubscribeKills("codex", func(job string) { got <- job })
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()
	k2, err := sub.SubscribeKills("claude", func(job string) { other <- job })
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Stop()

	// Garbage first, straight on the subject.
	raw, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, data := range []string{"not json", `{"job":"../../etc"}`, `{"job":""}`, `{"job":"job-a/b"}`} {
		raw.Publish(natsbus.KillSubject("codex"), []byte(data))
	}
	raw.Flush()

	const job = "job-msg-20260111-163315-alice-4c78"
	if err := pub.PublishKill(ctxT(t), "codex", natsbus.KillRequest{Job: job, By: "bob", Host: "h"}); err != nil {
		t.Fatalf("PublishKill: %v", err)
	}
	select {
	case id := <-got:
		if id != job {
			t.Errorf("kill request for %q, want %q (garbage must not get through)", id, job)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kill request did not arrive")
	}
	eventually(t, "the garbage to be counted", func() bool { return sub.Stats().Rejected == 4 })
	if len(other) != 0 || len(got) != 0 {
		t.Errorf("extra deliveries: %d to claude, %d more to codex", len(other), len(got))
	}

	for _, tt := range []struct{ agent, job string }{
		{"../x", job},
		{"codex", "msg-20260111-163315-alice-4c78"},
		{"codex", "job-a.b"},
		{"codex", ""},
	} {
		if err := pub.PublishKill(ctxT(t), tt.agent, natsbus.KillRequest{Job: tt.job}); !errors.Is(err, tree.ErrBadName) {
			t.Errorf("PublishKill(%q, %q) = %v, want a bad name error", tt.agent, tt.job, err)
		}
	}
	if _, err := sub.SubscribeKills("a b", func(string) {}); !errors.Is(err, tree.ErrBadName) {
		t.Errorf("SubscribeKills(\"a b\") = %v, want a bad name error", err)
	}
}
