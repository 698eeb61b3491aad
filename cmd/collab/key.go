package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
)

var keyUsage = helpText("key")

// runKey makes, trusts, revokes and lists signing keys.
var runKey = subcommands("key", same(runKeySub, "new", "trust", "revoke", "list"), nil)

func runKeySub(ctx context.Context, sub string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if sub == "new" {
		return runKeyNew(ctx, args, getenv, stdout, stderr)
	}
	fs := cmdFlags("key "+sub, keyUsage+"\nFlags:\n", stderr)
	at := new(string)
	if sub == "revoke" {
		at = fs.String("at", "", "revoke from this time on (RFC 3339; default now)")
	}
	asJSON := fs.Bool("json", false, "print the agents' keys as JSON")
	c := addCommon(fs, withKeyring, withRoot)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	req, words, svc := service.KeyRequest{Keyring: *c.ring}, fs.Args(), c.mount(getenv, stderr)
	var l service.KeyList
	var err error
	switch {
	case sub == "list":
		l, err = svc.Keys(ctx, req, words)
	case sub == "trust" && len(words) != 2:
		return usageErrorf("key trust: want AGENT PUBKEY (the public key 'collab key new' printed)")
	case sub == "trust":
		req.Agent, req.Public = words[0], words[1]
		l, err = svc.TrustKey(ctx, req)
	case len(words) < 1 || len(words) > 2:
		return usageErrorf("key revoke: want AGENT [PUBKEY] (no PUBKEY: every key of AGENT)")
	default:
		req.Agent, req.Public = words[0], strings.Join(words[1:], "") // no PUBKEY: every key
		if *at != "" {
			if req.At, err = time.Parse(time.RFC3339, *at); err != nil {
				return usageErrorf("key revoke: --at %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", *at)
			}
		}
		l, err = svc.RevokeKey(ctx, req)
	}
	if err != nil {
		return fmt.Errorf("key %s: %w", sub, err)
	}
	if l.Unsafe != nil {
		fmt.Fprintf(stderr, "collab: warning: %v\n", l.Unsafe)
		fmt.Fprintf(stderr, "collab: warning: until that is fixed, an agent account could replace a key and the verdicts prove nothing; the keyring (%s) and its files must be owned by root or the tree's owner and writable by no one else\n", l.Dir)
	}
	return show(stdout, *asJSON, l.Keys, service.KeysText(l.Keys))
}

// runKeyNew makes an agent's key pair.
func runKeyNew(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	fs := cmdFlags("key new", keyUsage+"\nFlags:\n", stderr)
	agent := agentFlag(fs, "", "the agent the key signs for", true)
	c := addCommon(fs, withKey)
	force := fs.Bool("force", false, "replace an existing key file (the old key then signs nothing new)")
	asJSON := fs.Bool("json", false, `print {"agent", "key", "file", "trust"} as JSON`)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	a, err := actingAgent(ctx, "key new", "agent", *agent)
	if err != nil {
		return err
	}
	path := cmp.Or(c.keyPath(), signing.DefaultKeyPath(a, getenv))
	s, err := signing.NewKey(path, a, *force)
	if err != nil {
		return fmt.Errorf("key new: %w", err)
	}
	trust := "collab key trust " + a + " " + s.PublicKey()
	return show(stdout, *asJSON, map[string]string{"agent": a, "key": s.PublicKey(), "file": path, "trust": trust},
		fmt.Sprintf("%s\nWrote %s's private key to %s (mode 0600: keep it to this account).\n"+
			"Until the admin who ran 'collab init' trusts the public key above, nothing signed with it verifies:\n  %s\n", s.PublicKey(), a, path, trust))
}
