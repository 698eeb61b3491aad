package main

// The flags and wiring of signed senders, shared by every command that
// signs (send, watch, mcp, jobs kill, task) or verifies (read, verify,
// who, watch).

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

const (
	envKeyring = "COLLAB_KEYRING"
	envKey     = "COLLAB_KEY"
)

// keyringFlag adds --keyring, from $COLLAB_KEYRING; empty means the
// tree's ROOT/keys.
func keyringFlag(fs *pflag.FlagSet) *string {
	p := fs.String("keyring", "", "folder of trusted public keys (default ROOT/keys)")
	fromEnv(fs, "keyring", envKeyring)
	return p
}

// keyFlag adds --key, from $COLLAB_KEY: the private key to sign with.
func keyFlag(fs *pflag.FlagSet) *string {
	p := fs.String("key", "", "private key file to sign with (default $XDG_CONFIG_HOME/collab/keys/AGENT.key)")
	fromEnv(fs, "key", envKey)
	return p
}

// verifierFor returns a verifier over ring, after checking the ring as a
// reader: an unsafe keyring is reported on stderr (its verdicts prove
// nothing) but still used, since a reader only shows them.
func verifierFor(root tree.Root, ring *keyring.Ring, stderr io.Writer) *signing.Verifier {
	if err := ring.Check(keyring.Owner(string(root)), true); err != nil {
		fmt.Fprintf(stderr, "collab: warning: %v\n", err)
	}
	return signing.NewVerifier(ring).Forgetful() // a command reads each file once
}
