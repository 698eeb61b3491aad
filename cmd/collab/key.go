package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

const keyUsage = `Usage:
  collab key new --agent A [--key FILE] [--force]   make A's key pair; print the public key
  collab key trust A PUBKEY                         (admin) trust PUBKEY as A's
  collab key revoke A [PUBKEY] [--at TIME]          (admin) revoke A's key, or every key of A
  collab key list [AGENT…]                          the trusted keys

A sender's private key lives in its account's config
($XDG_CONFIG_HOME/collab/keys/AGENT.key, mode 0600) or at --key / COLLAB_KEY;
send, watch and mcp sign with it. Readers trust only the keys in the
keyring (ROOT/keys, or --keyring / COLLAB_KEYRING), which only the admin
account that ran 'collab init' may write: run trust and revoke as that
account. A key revoked at TIME (RFC 3339, default now) verifies nothing
signed at or after TIME.
`

// runKey makes, trusts, revokes and lists signing keys.
func runKey(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, keyUsage)
		return &exitError{code: exitUsage}
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, keyUsage)
		return nil
	case "new":
		return runKeyNew(ctx, args, getenv, stdout, stderr)
	case "trust", "revoke", "list":
	default:
		return usageErrorf("key: unknown command %q; run 'collab key --help'", sub)
	}
	fs := newFlags("key "+sub, stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, keyUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	var at *string
	if sub == "revoke" {
		at = fs.String("at", "", "revoke from this time on (RFC 3339; default now)")
	}
	asJSON := fs.Bool("json", false, "print the agents' keys as JSON")
	ringf := keyringFlag(fs)
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	root := tree.Resolve(*rootf, getenv)
	ring := openKeyring(root, *ringf)
	words := fs.Args()
	for _, a := range words[:min(len(words), 1)] {
		if err := tree.CheckName("agent", a); err != nil {
			return usageErrorf("key %s: %v", sub, err)
		}
	}
	var agents []string // the agents to show afterwards; nil: all
	switch sub {
	case "trust":
		if len(words) != 2 {
			return usageErrorf("key trust: want AGENT PUBKEY (the public key 'collab key new' printed)")
		}
		if _, err := keyring.ParsePublic(words[1]); err != nil {
			return usageErrorf("key trust: %v; give the base64 public key 'collab key new' printed", err)
		}
		if err := ring.Trust(words[0], words[1]); err != nil {
			return fmt.Errorf("key trust: %w", err)
		}
		agents = words[:1]
	case "revoke":
		if len(words) < 1 || len(words) > 2 {
			return usageErrorf("key revoke: want AGENT [PUBKEY] (no PUBKEY: every key of AGENT)")
		}
		pub := ""
		if len(words) == 2 {
			pub = words[1]
			if _, err := keyring.ParsePublic(pub); err != nil {
				return usageErrorf("key revoke: %v", err)
			}
		}
		when := time.Now()
		if *at != "" {
			t, err := time.Parse(time.RFC3339, *at)
			if err != nil {
				return usageErrorf("key revoke: --at %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", *at)
			}
			when = t
		}
		err := ring.Revoke(words[0], pub, when)
		if errors.Is(err, keyring.ErrNotFound) {
			return &exitError{code: exitNothing, msg: fmt.Sprintf("key revoke: %v", err)}
		}
		if err != nil {
			return fmt.Errorf("key revoke: %w", err)
		}
		agents = words[:1]
	case "list":
		for _, a := range words {
			if err := tree.CheckName("agent", a); err != nil {
				return usageErrorf("key list: %v", err)
			}
		}
		if len(words) > 0 {
			agents = words
		}
	}
	if err := ring.Check(keyring.Owner(string(root)), true); err != nil {
		fmt.Fprintf(stderr, "collab: warning: %v\n", err)
		fmt.Fprintf(stderr, "collab: warning: until that is fixed, an agent account could replace a key and the verdicts prove nothing; the keyring (%s) and its files must be owned by root or the tree's owner and writable by no one else\n", ring.Dir())
	}
	return printKeys(ring, agents, *asJSON, stdout)
}

// keyRow is one key as 'key list' prints it.
type keyRow struct {
	Agent   string     `json:"agent"`
	Key     string     `json:"key"`
	Added   time.Time  `json:"added"`
	Revoked *time.Time `json:"revoked,omitempty"`
}

// printKeys prints the keys of agents (nil: every agent), by agent.
func printKeys(ring *keyring.Ring, agents []string, asJSON bool, w io.Writer) error {
	all, err := ring.List()
	if err != nil {
		return err
	}
	if agents == nil {
		for a := range all {
			agents = append(agents, a)
		}
		slices.Sort(agents)
	}
	rows := []keyRow{}
	for _, a := range agents {
		for _, k := range all[a] {
			rows = append(rows, keyRow{a, k.Public, k.Added, k.Revoked})
		}
	}
	if asJSON {
		return writeJSON(w, rows)
	}
	for _, r := range rows {
		state := "trusted"
		if r.Revoked != nil {
			state = "revoked " + r.Revoked.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%-12s %s  added %s  %s\n", r.Agent, r.Key, r.Added.UTC().Format(time.RFC3339), state)
	}
	return nil
}

// runKeyNew makes an agent's key pair.
func runKeyNew(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	fs := newFlags("key new", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, keyUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	agent := agentFlag(fs, "", "the agent the key signs for", true)
	keyf := keyFlag(fs)
	force := fs.Bool("force", false, "replace an existing key file (the old key then signs nothing new)")
	asJSON := fs.Bool("json", false, `print {"agent", "key", "file", "trust"} as JSON`)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("key new: unexpected argument %q", fs.Arg(0))
	}
	a, err := actingAgent(ctx, "key new", "agent", *agent)
	if err != nil {
		return err
	}
	path := *keyf
	if path == "" {
		path = signing.DefaultKeyPath(a, getenv)
	}
	s, err := signing.NewKey(path, a, *force)
	if err != nil {
		return fmt.Errorf("key new: %w", err)
	}
	trust := "collab key trust " + a + " " + s.PublicKey()
	if *asJSON {
		return writeJSON(stdout, map[string]string{"agent": a, "key": s.PublicKey(), "file": path, "trust": trust})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", s.PublicKey())
	fmt.Fprintf(&b, "Wrote %s's private key to %s (mode 0600: keep it to this account).\n", a, path)
	fmt.Fprintf(&b, "Until the admin who ran 'collab init' trusts the public key above, nothing signed with it verifies:\n  %s\n", trust)
	_, err = io.WriteString(stdout, b.String())
	return err
}
