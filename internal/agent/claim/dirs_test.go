package claim_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/remote"
)

// The tests of this package run twice: over the files (Store.Dirs nil),
// and, in the child process TestViaBridge starts, over a bridge: each
// store made by store() opens its folders with a remote.Client's
// ClaimDirs whose requests a bridge.Server on the same root performs
// (Handle called in process; the NATS path is tested in package remote).
// Its stores sign with a key the bridge trusts, as a remote watcher must.
const dirsEnv = "COLLAB_CLAIM_TEST_DIRS"

var viaBridge = os.Getenv(dirsEnv) == "bridge"

// bridgeKey is agent's key in the bridge runs.
var bridgeKey = signing.NewSigner(agent, ed25519.NewKeyFromSeed(sha256.New().Sum(nil)))

// trustedKeys are the keys the bridges of the bridge runs trust.
var trustedKeys = struct {
	sync.Mutex
	m map[string]string // public key -> agent
}{m: map[string]string{bridgeKey.PublicKey(): agent}}

func trustForBridge(k *signing.Signer) {
	trustedKeys.Lock()
	defer trustedKeys.Unlock()
	trustedKeys.m[k.PublicKey()] = k.Agent()
}

type testKeys struct{}

func (testKeys) Find(a, pub string) (keyring.Key, error) {
	trustedKeys.Lock()
	defer trustedKeys.Unlock()
	if trustedKeys.m[pub] != a {
		return keyring.Key{}, fs.ErrNotExist
	}
	return keyring.Key{Public: pub}, nil
}

func (testKeys) HasKeys(string) bool { return true }

// handler is a remote.Requester served by a bridge.Server in process.
type handler struct{ s *bridge.Server }

func (h handler) Request(_ context.Context, subject string, data []byte) ([]byte, error) {
	bridgeRequests.Add(1)
	return h.s.Handle(subject, data), nil
}

var bridgeRequests atomic.Int64

// bridgeDirs returns a's claims folders of root through a bridge, or nil
// (the files) for a name a remote client refuses.
func bridgeDirs(root tree.Root, a string) claim.Dirs {
	srv := bridge.New(bridge.Config{Root: root, Verifier: signing.NewVerifier(testKeys{}), Logger: slog.New(slog.DiscardHandler)})
	c, err := remote.New(remote.Config{Agent: a, StateDir: os.TempDir(), Requester: handler{srv}})
	if err != nil {
		return nil
	}
	return c.ClaimDirs()
}

// TestViaBridge runs this package's tests again with every store over a
// bridge (claim.Dirs of package remote, served by package bridge).
func TestViaBridge(t *testing.T) {
	if viaBridge {
		t.Skip("this is the run over the bridge")
	}
	cmd := exec.Command(os.Args[0], "-test.count=1", "-test.skip", "^(TestViaBridge|TestTwoHosts)$")
	cmd.Env = append(os.Environ(), dirsEnv+"=bridge")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests over a bridge: %v\n%s", err, out)
	}
}

// TestStoreOverBridge: in the bridge run, a store's claims are made, and
// judged, through the bridge, and land on the files.
func TestStoreOverBridge(t *testing.T) {
	if !viaBridge {
		t.Skip("over the files")
	}
	root := tree.Root(t.TempDir())
	before := bridgeRequests.Load()
	clk := newClock(t0)
	a, b := store(root, owner("a", "ia"), clk), store(root, owner("b", "ib"), clk)
	if _, got := acquire(t, a, chan1, msgID); got != claim.Acquired {
		t.Fatalf("a: %v", got)
	}
	if _, got := acquire(t, b, chan1, msgID); got != claim.Held {
		t.Fatalf("b: %v", got)
	}
	if n := bridgeRequests.Load() - before; n < 3 {
		t.Fatalf("%d bridge requests", n)
	}
	if c := readClaim(t, root, chan1, msgID); c.Owner.Instance != "ia" || c.Signature == nil {
		t.Fatalf("on the files: %+v", c)
	}
}
