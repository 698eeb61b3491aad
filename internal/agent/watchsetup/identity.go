package watchsetup

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// identity opens and checks the keyring and loads the agent's key: an
// agent with keys in the ring must sign (unless trust is any). noticed
// says the tree has no keys yet and this agent none either (a new
// user's first watch): one notice has said so, with the command that
// gives the agent a key, in place of the keyring's warning and the
// watcher's own about unsigned messages (watcher.Config.KeysNoticed);
// the notice is given once per h.Said.
func identity(root tree.Root, s Settings, policy signing.Policy, h Host) (_ *keyring.Ring, _ *signing.Signer, noticed bool, _ error) {
	ring, warning, err := checkKeyring("watch", root, s.Keyring, policy, s.AllowWritableKeyring)
	if err != nil {
		return nil, nil, false, err
	}
	signer, err := signing.LoadAgentKey(s.Key, s.Agent, h.getenv)
	if err != nil {
		return nil, nil, false, invalid("watch: %v", err)
	}
	if signer == nil && policy != signing.Any && ring.HasKeys(s.Agent) {
		// Its own claims, heartbeats and replies would be unsigned in the
		// name of an agent with keys: forgeries to every other watcher.
		return nil, nil, false, invalid("watch: %s has keys in the keyring %s but this watcher has no private key (looked in %s): give it its key with --key or %s, or run with --trust any",
			s.Agent, ring.Dir(), cmp.Or(s.Key, signing.DefaultKeyPath(s.Agent, h.getenv)), envKey)
	}
	if signer == nil && ring.Empty() {
		if h.Said.first(noticeNoKeys) {
			fmt.Fprintf(h.stderr(), "collab: warning: no agent has a signing key in this tree yet (the keyring %s is empty), so messages are unsigned and anyone who can write the tree can post in any agent's name; to sign %s's, run: collab key new --agent %s\n",
				ring.Dir(), s.Agent, s.Agent)
		}
		return ring, nil, true, nil
	}
	if warning != nil {
		fmt.Fprintf(h.stderr(), "collab: warning: %v\n", warning)
	}
	return ring, signer, false, nil
}

// noticeNoKeys is the key of identity's notice in a Said.
const noticeNoKeys = "no-keys"

// Said remembers the notices a process has given, so that one running
// several watchers (a workflow's team) gives each once. The zero value is
// ready; share it by pointer (Host.Said). A nil Said remembers nothing.
type Said struct {
	mu   sync.Mutex
	said map[string]bool
}

// first reports whether the notice key is given for the first time.
func (s *Said) first(key string) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.said[key] {
		return false
	}
	if s.said == nil {
		s.said = map[string]bool{}
	}
	s.said[key] = true
	return true
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
	ring, warning, err := checkKeyring(cmd, root, dir, policy, allowWritable)
	if warning != nil {
		fmt.Fprintf(stderr, "collab: warning: %v\n", warning)
	}
	return ring, err
}

// checkKeyring is CheckedKeyring, returning the problem it lets pass as
// a warning for its caller to give.
func checkKeyring(cmd string, root tree.Root, dir string, policy signing.Policy, allowWritable bool) (_ *keyring.Ring, warning, _ error) {
	ring := keyring.In(root, dir)
	err := ring.Check(keyring.Owner(string(root)), allowWritable)
	if err == nil {
		return ring, nil, nil
	}
	if policy == signing.Any || ring.Empty() {
		return ring, err, nil
	}
	hint := "; on a single-account setup pass --allow-writable-keyring"
	if cmd != "watch" {
		hint = ""
	}
	return nil, nil, invalid("%s: refusing the keyring %s (%s; --trust %s): %v\n"+
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
