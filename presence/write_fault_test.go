package presence

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/tmpfs"
)

// A failed heartbeat write leaves the previous heartbeat whole and no temp
// file behind (fault scenario 4). Two real failures: a full tmpfs (ENOSPC,
// needs root to mount) and a file size limit (EFBIG, any user), both in
// the middle of writing the new file.

func heartbeat(extra int) Status {
	s := Status{AgentID: "codex", Timestamp: at(0), State: StateAwake, Substate: SubIdle,
		WatcherPID: 42, Channel: "general", Host: "vm-2"}
	if extra > 0 {
		pad, _ := json.Marshal(strings.Repeat("x", extra))
		s.Extra = map[string]json.RawMessage{"pad": pad}
		s.Substate = SubWorking
	}
	return s
}

// checkUnchanged checks that root holds exactly the heartbeat want, in a
// file of its own and nothing else.
func checkUnchanged(t *testing.T, root tree.Root, want Status) {
	t.Helper()
	got, err := Read(root, "codex")
	if err != nil {
		t.Fatalf("the previous heartbeat is unreadable: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("heartbeat = %+v, want the previous one %+v", got, want)
	}
	ents, err := os.ReadDir(root.Presence())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"codex.json"}; !slices.Equal(names, want) {
		t.Errorf("presence folder = %q, want %q (no temp file)", names, want)
	}
}

func TestWriteFullDiskKeepsHeartbeat(t *testing.T) {
	dir, err := tmpfs.Mount(t, "64k")
	if err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	root := tree.Root(dir)
	old := heartbeat(0)
	if err := Write(root, old); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{4 << 10, 1} {
		for {
			if _, err := f.Write(make([]byte, size)); err != nil {
				break
			}
		}
	}
	f.Close()

	for _, s := range []Status{heartbeat(0), heartbeat(100 << 10)} {
		s.Substate = SubWorking
		if err := Write(root, s); !errors.Is(err, unix.ENOSPC) {
			t.Fatalf("Write on a full disk = %v, want ENOSPC", err)
		}
		checkUnchanged(t, root, old)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s := heartbeat(0)
	s.Substate = SubWorking
	if err := Write(root, s); err != nil {
		t.Fatalf("Write once space is back: %v", err)
	}
	if got, _ := Read(root, "codex"); got.Substate != SubWorking {
		t.Errorf("heartbeat after space returned = %+v, want WORKING", got)
	}
}

const fsizeChild = "COLLAB_PRESENCE_TEST_FSIZE_ROOT"

func TestWriteFailureKeepsHeartbeat(t *testing.T) {
	if root := os.Getenv(fsizeChild); root != "" {
		// The child: writes beyond 4 KiB fail with EFBIG (SIGXFSZ ignored).
		signal.Ignore(syscall.SIGXFSZ)
		lim := unix.Rlimit{Cur: 4 << 10, Max: 4 << 10}
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatalf("setrlimit: %v", err)
		}
		err := Write(tree.Root(root), heartbeat(64<<10))
		if !errors.Is(err, unix.EFBIG) {
			t.Fatalf("Write beyond the size limit = %v, want EFBIG", err)
		}
		t.Log("child: write failed with EFBIG")
		return
	}
	root := tree.Root(t.TempDir())
	old := heartbeat(0)
	if err := Write(root, old); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFailureKeepsHeartbeat$", "-test.count=1", "-test.v")
	// -race waits 1 s at a child's exit unless told not to.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), fsizeChild+"="+string(root), "GORACE="+gorace)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child: write failed with EFBIG") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	checkUnchanged(t, root, old)
}
