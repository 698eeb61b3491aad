package bridge

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

	"github.com/collabdev/collab/internal/testsupport/natstest"
)

// TestAccountsTemplate: with deploy/nats/accounts.conf, agent a's user
// cannot publish on b's request subjects nor read b's replies, a forged
// body on a's own subject is refused by the bridge, and a's own signed
// post goes through.
func TestAccountsTemplate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(natstest.AccountsConf(t, "a", "b")), 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("accounts.conf: %v", err)
	}
	srv := natstest.Start(t, true, func(o *server.Options) {
		o.Accounts, o.Users, o.Nkeys = parsed.Accounts, parsed.Users, parsed.Nkeys
	})
	e := newEnv(t)
	ka, kb := e.keyFor(t, "a"), e.keyFor(t, "b")
	bnc, err := nats.Connect(srv.URL(), nats.UserInfo("bridge", "pw-bridge"))
	if err != nil {
		t.Fatal(err)
	}
	defer bnc.Close()
	s := e.server(Config{})
	serveOn(t, s, bnc)

	errs := make(chan error, 10)
	anc := connect(t, srv.URL(), nats.UserInfo("remote-a", "pw-remote-a"), nats.CustomInboxPrefix(InboxPrefix("a")),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))

	// violation waits for the server's (async) permissions violation.
	violation := func(what string) {
		t.Helper()
		select {
		case err := <-errs:
			if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				t.Fatalf("%s: error %v, want a permissions violation", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: allowed", what)
		}
	}

	// b's subject: the server refuses the publish, no bridge sees it, no
	// file.
	body := postBody(t, msg("b", "dev", "a posing as b", kb))
	if _, err := anc.Request(RequestSubject(OpPost, "b"), body, 500*time.Millisecond); err == nil {
		t.Fatal("a's request on b's subject was answered")
	}
	violation("a's request on b's subject")
	if _, err := os.Stat(e.root.Channel("dev")); err == nil {
		t.Fatal("a file was written")
	}
	// b's reply inbox is not a's to read.
	if _, err := anc.SubscribeSync("_INBOX.collab.b.>"); err == nil {
		anc.Flush()
		violation("subscribing to b's inbox")
	}
	// No state on the server that a could touch for b: no durable
	// consumer can be made (one named as b's mirror's once was), and
	// nothing acknowledged.
	for _, subj := range []string{
		"$JS.API.CONSUMER.DURABLE.CREATE.CHAT.remote-b",
		"$JS.ACK.CHAT.remote-b.1.7.7.1700000000000000000.0",
	} {
		if err := anc.Publish(subj, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		anc.Flush()
		violation("publish " + subj)
	}

	// a's own subject with b's message: the bridge refuses it.
	var r Reply
	m, err := anc.Request(RequestSubject(OpPost, "a"), body, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if json.Unmarshal(m.Data, &r); r.OK || r.Code != CodeForbidden {
		t.Fatalf("forged body on a's subject: %s", m.Data)
	}
	// a's own signed message goes through.
	m, err = anc.Request(RequestSubject(OpPost, "a"), postBody(t, msg("a", "dev", "a itself", ka)), 5*time.Second)
	if err != nil || !strings.Contains(string(m.Data), `"ok":true`) {
		t.Fatalf("a's own post: %v %s", err, m.Data)
	}
}
