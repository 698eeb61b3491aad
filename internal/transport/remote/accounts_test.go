package remote

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// accountsServer runs a JetStream server with deploy/nats/accounts.conf's
// accounts (remote agents alice, bob and r2-d2, each in its own) and the
// stream CHAT, made by the team's user, whose JetStream it returns.
func accountsServer(t *testing.T) (url string, team jetstream.JetStream) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(natstest.AccountsConf(t, "alice", "bob", "r2-d2")), 0o600); err != nil {
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
// (alice, in her own account REMOTE-alice, which imports from the team's
// account COLLAB) can make no consumer of the stream at all (durable,
// ephemeral, push to bob's kill subject, by any API, under any name, her
// old AGENT-cN ones too), nor look at, read or delete one the team made,
// nor change the stream, nor ask for the JetStream account info her
// account imports only to keep the server from answering for it, nor send
// bob's bridge requests. Each refusal is the server's permissions
// violation, and the stream's consumers are checked after it. What she
// may do of JetStream, the stream's info and direct gets through her
// account's imports, works.
func TestAccountsConsumers(t *testing.T) {
	url, team := accountsServer(t)
	// A consumer of the team's, which alice must not touch.
	s, err := team.Stream(t.Context(), natsbus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	const teams = "team-reader"
	if _, err := s.CreateOrUpdateConsumer(t.Context(), jetstream.ConsumerConfig{Durable: teams, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := team.Publish(t.Context(), natsbus.ChatSubject("dev"), []byte(`{}`)); err != nil {
		t.Fatal(err)
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
	// Names of hers under the template before: each case its own, so
	// that under that template each would be made.
	own := func(i int) string { return "alice-c" + strconv.Itoa(i) }
	kill := natsbus.KillSubject("bob")
	for _, tc := range []struct {
		name, subject string
		body          []byte
	}{
		{"durable by the legacy API", "$JS.API.CONSUMER.DURABLE.CREATE.CHAT.sticky", config("sticky", "sticky", "")},
		{"durable named by the request", "$JS.API.CONSUMER.CREATE.CHAT", config("", "sticky", "")},
		{"durable under her own name", "$JS.API.CONSUMER.CREATE.CHAT." + own(1) + ".collab.chat.dev", config(own(1), own(1), "")},
		{"push to bob's kill subject, name from the request", "$JS.API.CONSUMER.CREATE.CHAT", config("pusher", "", kill)},
		{"push to bob's kill subject under her own name", "$JS.API.CONSUMER.CREATE.CHAT." + own(2), config(own(2), "", kill)},
		{"durable push to bob's kill subject under her own name", "$JS.API.CONSUMER.CREATE.CHAT." + own(3) + ".collab.chat.dev", config(own(3), own(3), kill)},
		{"ephemeral named by the server", "$JS.API.CONSUMER.CREATE.CHAT", config("", "", "")},
		{"ephemeral under her own name", "$JS.API.CONSUMER.CREATE.CHAT." + own(4), config(own(4), "", "")},
		{"ephemeral under her own name and filter", "$JS.API.CONSUMER.CREATE.CHAT." + own(5) + ".collab.chat.dev", config(own(5), "", "")},
		{"updating the team's consumer", "$JS.API.CONSUMER.CREATE.CHAT." + teams, config(teams, teams, kill)},
		{"looking at the team's consumer", "$JS.API.CONSUMER.INFO.CHAT." + teams, nil},
		{"reading the team's consumer", "$JS.API.CONSUMER.MSG.NEXT.CHAT." + teams, []byte(`{"batch":1,"expires":1000000000}`)},
		{"deleting the team's consumer", "$JS.API.CONSUMER.DELETE.CHAT." + teams, nil},
		{"listing consumers", "$JS.API.CONSUMER.LIST.CHAT", []byte(`{}`)},
		{"acknowledging", "$JS.ACK.CHAT." + teams + ".1.1.1.1700000000000000000.0", nil},
		{"updating the stream", "$JS.API.STREAM.UPDATE.CHAT", []byte(`{"name":"CHAT","subjects":["collab.chat.>"],"allow_direct":false}`)},
		{"purging the stream", "$JS.API.STREAM.PURGE.CHAT", []byte(`{}`)},
		{"deleting a message", "$JS.API.STREAM.MSG.DELETE.CHAT", []byte(`{"seq":1}`)},
		{"the account's JetStream info", "$JS.API.INFO", nil},
		{"a direct get of the last message by subject", "$JS.API.DIRECT.GET.CHAT." + natsbus.ChatSubject("dev"), nil},
		{"bob's bridge requests", "collab.bridge.v1.post.bob", []byte(`{}`)},
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
			if c, ok := after[teams]; !ok || c.DeliverSubject != "" {
				t.Fatalf("the team's consumer: %v %+v", ok, c)
			}
		})
	}

	// What she may: the stream's info and a direct get of it.
	ajs, err := jetstream.New(anc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := natsbus.DirectInfo(ctx, ajs); err != nil {
		t.Fatalf("the stream's info: %v", err)
	}
	n := 0
	if _, err := natsbus.DirectBatch(ctx, anc, natsbus.DirectRequest{Seq: 1, Subject: natsbus.ChatSubject("dev"), Batch: 10},
		func(*natsbus.StoredMsg) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("a direct get: %d messages, %v", n, err)
	}
	select {
	case err := <-errs:
		t.Fatalf("what alice may do: %v", err)
	default:
	}
}

// TestAccountsConnectionCap: each remote agent's account caps its
// connections (limits { max_connections } of the template): alice's
// connection after the cap is refused with the server's error, while bob
// and r2-d2, whose accounts are their own, and the team still connect.
func TestAccountsConnectionCap(t *testing.T) {
	url, _ := accountsServer(t)
	max := natstest.RemoteMaxConnections(t)
	if max < 1 || max > 64 {
		t.Fatalf("max_connections %d in the template", max)
	}
	for range max {
		remoteConn(t, url, "alice")
	}
	nc, err := nats.Connect(url, nats.UserInfo("remote-alice", "pw-remote-alice"), nats.NoReconnect())
	if err == nil {
		nc.Close()
		t.Fatalf("alice's connection %d was accepted", max+1)
	}
	if !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
		t.Fatalf("alice's connection %d: %v, want %v", max+1, err, nats.ErrMaxAccountConnectionsExceeded)
	}
	for _, user := range []string{"remote-bob", "remote-r2-d2", "collab"} {
		nc, err := nats.Connect(url, nats.UserInfo(user, "pw-"+user))
		if err != nil {
			t.Fatalf("%s with alice at her cap: %v", user, err)
		}
		nc.Close()
	}
}

// TestAccountsExportsForOneAccount: COLLAB's exports name the one account
// each is for, so a server whose configuration has another account import
// them does not start: bob's account importing alice's bridge subject, or
// an account no agent's importing the channels.
func TestAccountsExportsForOneAccount(t *testing.T) {
	for _, tc := range []struct{ name, account, imports string }{
		{"bob imports alice's bridge subject", "REMOTE-bob", `{ service: { account: COLLAB, subject: "collab.bridge.v1.*.alice" } }`},
		{"bob imports alice's bridge subject for post", "REMOTE-bob", `{ service: { account: COLLAB, subject: "collab.bridge.v1.post.alice" } }`},
		{"another account imports the channels", "OTHER", `{ stream: { account: COLLAB, subject: "collab.chat.>" } }`},
		{"another account imports direct gets", "OTHER", `{ service: { account: COLLAB, subject: "$JS.API.DIRECT.GET.CHAT" } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := natstest.AccountsConf(t, "alice", "bob")
			if tc.account == "OTHER" {
				at := strings.Index(conf, "REMOTE-bob {")
				conf = conf[:at] + "OTHER { imports: [ " + tc.imports + " ] }\n" + conf[at:]
			} else {
				at := strings.Index(conf, tc.account+" {")
				at += strings.Index(conf[at:], "imports: [") + len("imports: [")
				conf = conf[:at] + "\n" + tc.imports + "\n" + conf[at:]
			}
			path := filepath.Join(t.TempDir(), "nats.conf")
			if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := server.ProcessConfigFile(path)
			if err == nil || !strings.Contains(err.Error(), "not authorized") {
				t.Fatalf("accounts.conf with %s: %v, want not authorized", tc.imports, err)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
