package remote

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"collab/internal/testsupport/natstest"
	"collab/internal/transport/natsbus"
)

// accountsServer runs a JetStream server with deploy/nats/accounts.conf's
// users (remote agents alice and bob) and the stream CHAT, made by the
// team's user, whose JetStream it returns.
func accountsServer(t *testing.T) (url string, team jetstream.JetStream) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(natstest.AccountsConf(t, "alice", "bob")), 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("accounts.conf: %v", err)
	}
	url = natstest.Start(t, true, func(o *server.Options) {
		o.Accounts, o.Users, o.Nkeys = parsed.Accounts, parsed.Users, parsed.Nkeys
	}).URL()
	b, err := natsbus.Connect(t.Context(), natsbus.Options{URL: url, User: "collab", Password: "pw-collab"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if _, err := b.InitStream(t.Context(), natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.UserInfo("collab", "pw-collab"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	team, err = jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return url, team
}

// remoteConn connects as a remote agent's user, with its inbox prefix;
// the server's permission violations arrive on the channel.
func remoteConn(t *testing.T, url, agent string) (*nats.Conn, chan error) {
	t.Helper()
	errs := make(chan error, 16)
	nc, err := nats.Connect(url, nats.UserInfo("remote-"+agent, "pw-remote-"+agent), nats.CustomInboxPrefix("_INBOX.collab."+agent),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// consumerNames lists the stream's consumers, as the team sees them.
func consumerNames(t *testing.T, team jetstream.JetStream) map[string]jetstream.ConsumerConfig {
	t.Helper()
	s, err := team.Stream(t.Context(), natsbus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]jetstream.ConsumerConfig{}
	l := s.ListConsumers(t.Context())
	for ci := range l.Info() {
		out[ci.Name] = ci.Config
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAccountsConsumers: with deploy/nats/accounts.conf, a remote agent
// (alice) can make, read and delete its own consumers of the stream, at
// most ConsumerSlots at once, under its own names only: no durable by the
// legacy API, no consumer named as bob's or named by the server (so no
// push consumer under such a name either), no deleting bob's. Each
// refusal is the server's permissions violation, and the stream's
// consumers are checked after it.
func TestAccountsConsumers(t *testing.T) {
	url, team := accountsServer(t)
	// Bob's mirror holds its first consumer.
	bnc, _ := remoteConn(t, url, "bob")
	bjs, err := jetstream.New(bnc)
	if err != nil {
		t.Fatal(err)
	}
	bob := newStreamReader(bjs, "bob", "test")
	if err := bob.open(t.Context(), jetstream.ConsumerConfig{FilterSubject: natsbus.ChatSubject("dev")}); err != nil {
		t.Fatalf("bob's own consumer: %v", err)
	}
	if bob.name != ConsumerName("bob", 1) {
		t.Fatalf("bob holds %q", bob.name)
	}

	anc, errs := remoteConn(t, url, "alice")
	config := func(name, durable, deliver string) []byte {
		data, err := json.Marshal(map[string]any{"stream_name": natsbus.StreamName, "config": map[string]any{
			"name": name, "durable_name": durable, "deliver_subject": deliver,
			"ack_policy": "none", "deliver_policy": "all", "filter_subject": natsbus.ChatSubject("dev"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	bobs := ConsumerName("bob", 2)
	for _, tc := range []struct {
		name, subject string
		body          []byte
	}{
		{"durable by the legacy API", "$JS.API.CONSUMER.DURABLE.CREATE.CHAT.sticky", config("sticky", "sticky", "")},
		{"durable named by the request", "$JS.API.CONSUMER.CREATE.CHAT", config("", "sticky", "")},
		{"durable under bob's name", "$JS.API.CONSUMER.CREATE.CHAT." + bobs + ".collab.chat.dev", config(bobs, bobs, "")},
		{"push to bob's kill subject, name from the request", "$JS.API.CONSUMER.CREATE.CHAT", config("pusher", "", natsbus.KillSubject("bob"))},
		{"push to bob's kill subject under bob's name", "$JS.API.CONSUMER.CREATE.CHAT." + bobs, config(bobs, "", natsbus.KillSubject("bob"))},
		{"a consumer under bob's name", "$JS.API.CONSUMER.CREATE.CHAT." + bobs + ".collab.chat.dev", config(bobs, "", "")},
		{"updating bob's consumer", "$JS.API.CONSUMER.CREATE.CHAT." + bob.name + ".collab.chat.dev", config(bob.name, "", "")},
		{"deleting bob's consumer", "$JS.API.CONSUMER.DELETE.CHAT." + bob.name, nil},
		{"reading bob's consumer", "$JS.API.CONSUMER.MSG.NEXT.CHAT." + bob.name, []byte(`{"batch":1,"expires":1000000000}`)},
		{"a fifth consumer", "$JS.API.CONSUMER.CREATE.CHAT." + ConsumerName("alice", ConsumerSlots+1), config(ConsumerName("alice", ConsumerSlots+1), "", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := consumerNames(t, team)
			replies := make(chan *nats.Msg, 1)
			sub, err := anc.ChanSubscribe(anc.NewRespInbox(), replies)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := anc.PublishRequest(tc.subject, sub.Subject, tc.body); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-replies:
				t.Fatalf("answered: %s", m.Data)
			case err := <-errs:
				if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
					t.Fatalf("error %v, want a permissions violation", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no permissions violation")
			}
			after := consumerNames(t, team)
			if len(after) != len(before) {
				t.Fatalf("consumers %v, were %v", keys(after), keys(before))
			}
			if c, ok := after[bob.name]; !ok || c.Description != bob.desc {
				t.Fatalf("bob's consumer: %v %+v", ok, c)
			}
		})
	}

	// Alice's own: the mirror's kind of consumer, up to ConsumerSlots,
	// each read and deleted by her; one more is refused until one closes.
	ajs, err := jetstream.New(anc)
	if err != nil {
		t.Fatal(err)
	}
	var held []*streamReader
	for range ConsumerSlots {
		r := newStreamReader(ajs, "alice", "test")
		if err := r.open(t.Context(), jetstream.ConsumerConfig{FilterSubject: natsbus.ChatSubject("dev")}); err != nil {
			t.Fatalf("alice's consumer %d: %v", len(held)+1, err)
		}
		if err := r.fetch(t.Context(), 1, 100*time.Millisecond, func(jetstream.Msg, *jetstream.MsgMetadata) error { return nil }); err != nil {
			t.Fatalf("fetch from %s: %v", r.name, err)
		}
		held = append(held, r)
	}
	extra := newStreamReader(ajs, "alice", "test")
	err = extra.open(t.Context(), jetstream.ConsumerConfig{FilterSubject: natsbus.ChatSubject("dev")})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a fifth consumer of alice's: %v", err)
	}
	held[2].close()
	if err := extra.open(t.Context(), jetstream.ConsumerConfig{FilterSubject: natsbus.ChatSubject("dev")}); err != nil || extra.name != ConsumerName("alice", 3) {
		t.Fatalf("after one closed: %q %v", extra.name, err)
	}
	if _, ok := consumerNames(t, team)[bob.name]; !ok {
		t.Fatal("bob's consumer is gone")
	}
	select {
	case err := <-errs:
		t.Fatalf("alice's own consumers: %v", err)
	default:
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestConsumerName: each agent's names are its own (no two agents share
// one) and whole subject tokens.
func TestConsumerName(t *testing.T) {
	seen := map[string]string{}
	for _, a := range []string{"a", "a-c", "a-c1", "a_c1", "b", "a-c1-c"} {
		for i := 1; i <= ConsumerSlots; i++ {
			n := ConsumerName(a, i)
			if strings.ContainsAny(n, ".*> \t") {
				t.Fatalf("%q is not one token", n)
			}
			if other, ok := seen[n]; ok {
				t.Fatalf("%q is both %s's and %s's", n, a, other)
			}
			seen[n] = a
		}
	}
}
