package watchsetup

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// identity opens and checks the keyring and loads the agent's key: an
// agent with keys in the ring must sign (unless trust is any).
func identity(root tree.Root, s Settings, policy signing.Policy, h Host) (*keyring.Ring, *signing.Signer, error) {
	ring, err := CheckedKeyring("watch", root, s.Keyring, policy, s.AllowWritableKeyring, h.stderr())
	if err != nil {
		return nil, nil, err
	}
	signer, err := signing.LoadAgentKey(s.Key, s.Agent, h.getenv)
	if err != nil {
		return nil, nil, invalid("watch: %v", err)
	}
	if signer == nil && policy != signing.Any && ring.HasKeys(s.Agent) {
		// Its own claims, heartbeats and replies would be unsigned in the
		// name of an agent with keys: forgeries to every other watcher.
		return nil, nil, invalid("watch: %s has keys in the keyring %s but this watcher has no private key (looked in %s): give it its key with --key or %s, or run with --trust any",
			s.Agent, ring.Dir(), cmp.Or(s.Key, signing.DefaultKeyPath(s.Agent, h.getenv)), envKey)
	}
	return ring, signer, nil
}

// envKey is the variable of collab's --key.
const envKey = "COLLAB_KEY"

// CheckedKeyring opens the keyring that dir names (else the tree's) for a
// long-running command cmd (watch, serve, bridge) and checks it
// (keyring.Ring.Check), after which the ring holds the folder it checked:
// under trust known or signed, one that others than its admin could
// rewrite is refused (Invalid) unless it is empty, which gets a warning
// (it trusts nobody, so it grants nothing); under any, only a warning.
func CheckedKeyring(cmd string, root tree.Root, dir string, policy signing.Policy, allowWritable bool, stderr io.Writer) (*keyring.Ring, error) {
	ring := keyring.In(root, dir)
	err := ring.Check(keyring.Owner(string(root)), allowWritable)
	if err == nil {
		return ring, nil
	}
	if policy == signing.Any || ring.Empty() {
		fmt.Fprintf(stderr, "collab: warning: %v\n", err)
		return ring, nil
	}
	hint := "; on a single-account setup pass --allow-writable-keyring"
	if cmd != "watch" {
		hint = ""
	}
	return nil, invalid("%s: refusing the keyring %s (%s; --trust %s): %v\n"+
		"The keyring says whose signatures are trusted, so only root or the tree's owner may write it, "+
		"and only they may move it: as that admin, chown it, chmod go-w its folder and files, and run 'collab init --group GROUP' again "+
		"(it makes the tree's root sticky)%s.",
		cmd, ring.Dir(), describeOwner(ring.Dir()), policy, err, hint)
}

// describeOwner says who owns path and its mode.
func describeOwner(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	owner := "owner unknown"
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = fmt.Sprintf("owned by uid %d", st.Uid)
	}
	return fmt.Sprintf("%s, mode %v", owner, fi.Mode())
}
