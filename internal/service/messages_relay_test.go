package service_test

import (
	"context"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/testsupport/keytest"
)

// TestRelayRules: a remote agent's signed post is written only when it is
// the agent's, of the channel, and verifies; the same again is Existed,
// another with its id a Conflict.
func TestRelayRules(t *testing.T) {
	ring := keytest.Ring(t)
	rem := keytest.Trusted(t, ring, "rem")
	other := keytest.Trusted(t, ring, "other")
	svc := service.NewMount(service.Config{Root: tree.Root(t.TempDir()), Verifier: signing.NewVerifier(ring)})
	ctx := context.Background()
	seal := func(from string, s *signing.Signer, text string) []byte {
		t.Helper()
		m := &channel.Message{SessionID: "dev", From: from, Content: channel.Content{Text: text}}
		data, err := (&channel.Writer{Signer: s}).Seal(m)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	good := seal("rem", rem, "hello")
	r, err := svc.Relay(ctx, "rem", "dev", good)
	if err != nil || r.Existed {
		t.Fatalf("Relay = %+v, %v", r, err)
	}
	if r, err := svc.Relay(ctx, "rem", "dev", good); err != nil || !r.Existed {
		t.Errorf("Relay again = %+v, %v; want Existed", r, err)
	}
	for _, tt := range []struct {
		name  string
		agent string
		ch    string
		data  []byte
		kind  errkind.Kind
	}{
		{"another's message", "rem", "dev", seal("other", other, "x"), errkind.Forbidden},
		{"unsigned", "rem", "dev", seal("rem", nil, "x"), errkind.Forbidden},
		{"another channel", "rem", "ops", good, errkind.Invalid},
		{"nothing", "rem", "dev", nil, errkind.Invalid},
		{"not JSON", "rem", "dev", []byte("{"), errkind.Invalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := svc.Relay(ctx, tt.agent, tt.ch, tt.data); errkind.Of(err) != tt.kind || err == nil {
				t.Errorf("Relay = %v (kind %v); want kind %v", err, errkind.Of(err), tt.kind)
			}
		})
	}
}
