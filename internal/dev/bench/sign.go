package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// trustKeys makes a key pair for each agent, trusts its public key in
// root's keyring (ROOT/keys, written by this account, so a collab watch
// over root needs --allow-writable-keyring) and returns the signers. The
// keyring files are written four at a time.
func trustKeys(root tree.Root, agents []string) (map[string]*signing.Signer, error) {
	ring := keyring.Open(root.Keys())
	if err := ring.Create(); err != nil {
		return nil, err
	}
	signers := make(map[string]*signing.Signer, len(agents))
	for _, a := range agents {
		if _, ok := signers[a]; ok {
			continue
		}
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		signers[a] = signing.NewSigner(a, priv)
	}
	jobs := make(chan *signing.Signer)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for s := range jobs {
				if err := ring.Trust(s.Agent(), s.PublicKey()); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for _, s := range signers {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, fmt.Errorf("keyring: %w", err)
	default:
	}
	return signers, nil
}

// signSize is one message size of the sign part.
type signSize struct {
	label string // "1 KiB"
	text  int    // bytes of content.text
	unit  string // of the figures: "µs" or "ms"
	iters int    // operations timed per run and figure
}

func (b *bench) sign(ctx context.Context) []Figure {
	sizes := []signSize{
		{"1 KiB", 1 << 10, "µs", b.size.signSmall},
		{"1 MB", channel.MaxMessageSize - 4<<10, "ms", b.size.signLarge},
	}
	var specs []spec
	for _, s := range sizes {
		per := fmt.Sprintf("; the mean of %d per run, payload built from the message's fields each time", s.iters)
		specs = append(specs,
			spec{name: "sign, " + s.label + " message (Message.Sign)", unit: s.unit,
				note: "channel.Message.Sign with a signing.Signer (Ed25519)" + per},
			spec{name: "verify, " + s.label + " signed message, first check", unit: s.unit,
				note: "channel.Message.Verify with a new signing.Verifier over the keyring (ROOT/keys, its lookups cached) each time: a digest of the payload and the Ed25519 check" + per},
			spec{name: "verify again, " + s.label + " signed message (remembered)", unit: s.unit,
				note: "channel.Message.Verify with one Verifier that has checked the message before: the digest and a map lookup, no Ed25519" + per})
	}
	fail := func(err error) []Figure {
		var out []Figure
		for _, s := range specs {
			out = append(out, s.figure(nil, err))
		}
		return out
	}
	root := tree.Root(filepath.Join(b.dir, "sign"))
	signers, err := trustKeys(root, []string{senderAgent})
	if err != nil {
		return fail(err)
	}
	ring := keyring.Open(root.Keys())
	var out []Figure
	for k, s := range sizes {
		scale := float64(time.Microsecond)
		if s.unit == "ms" {
			scale = float64(time.Millisecond)
		}
		at := time.Now().UTC().Truncate(time.Millisecond)
		m := channel.Message{
			ID: channel.NewID(senderAgent, at, "5167"), Timestamp: at.Format(channel.TimeFormat),
			SessionID: "sign", From: senderAgent, To: "bob", Type: "chat",
			Content:  channel.Content{Text: strings.Repeat("signed text ", s.text/12+1)[:s.text]},
			Metadata: channel.Metadata{Mode: channel.ModeChat, Turn: senderAgent},
		}
		vals, err := b.repeat(ctx, "sign "+s.label+" "+s.unit, 3, func(int) ([]float64, error) {
			per := func(took time.Duration) float64 { return float64(took) / float64(s.iters) / scale }
			t0 := time.Now()
			for range s.iters {
				if err := m.Sign(signers[senderAgent]); err != nil {
					return nil, err
				}
			}
			signed := per(time.Since(t0))
			t0 = time.Now()
			for range s.iters {
				if v := m.Verify(signing.NewVerifier(ring), m.SessionID); v != signing.Verified {
					return nil, fmt.Errorf("first check: %v", v)
				}
			}
			first := per(time.Since(t0))
			v := signing.NewVerifier(ring)
			m.Verify(v, m.SessionID)
			t0 = time.Now()
			for range s.iters {
				if got := m.Verify(v, m.SessionID); got != signing.Verified {
					return nil, fmt.Errorf("remembered check: %v", got)
				}
			}
			return []float64{signed, first, per(time.Since(t0))}, nil
		})
		for j := range 3 {
			out = append(out, specs[3*k+j].figure(vals[j], err))
		}
	}
	return out
}
