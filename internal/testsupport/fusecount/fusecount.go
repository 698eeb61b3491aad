// Package fusecount mounts a counting passthrough (loopback) FUSE file
// system over a folder: every request the kernel sends it is counted by
// kind (lookup, getattr, opendir, readdir, open, read, write, create,
// rename, link, unlink, fsync, statfs, …) and by the class of the path it
// is about (a channel's folder, claims, presence, an agent's state, …).
// collab's bench puts it under one "host" view of a tree to measure what a
// watcher would cost an NFS server: a FUSE request is what the kernel
// could not answer from its own caches, as an NFS RPC is.
//
// The file system is go-fuse's loopback (fs.LoopbackNode, its files kept
// off FUSE passthrough so that reads and writes are requests); the counts
// are taken one layer down, on the fuse.RawFileSystem the node file system
// is served through, so that they are the kernel's requests themselves
// (one READDIR request may carry many entries, one GETATTR may come from
// a statx with AT_STATX_FORCE_SYNC while the attributes were cached). A
// request's class comes from its node's path, learned from the replies
// that name nodes (lookup, create, mkdir, link, symlink, mknod): a node
// renamed to another class keeps its old one (collab renames only within
// a folder).
//
// Mounting needs /dev/fuse and fusermount3 (or fusermount); [Available]
// says whether they are there.
package fusecount

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Key is one cell of the counts: a request kind and a path class.
type Key struct {
	Op    string // lookup, getattr, readdir, …: the FUSE opcode, lower case
	Class string // the path's class, from Options.Classify
}

// Counts are requests by kind and class.
type Counts map[Key]uint64

// Total is the sum of all counts.
func (c Counts) Total() uint64 {
	var n uint64
	for _, v := range c {
		n += v
	}
	return n
}

// ByOp sums the counts of each kind over the classes.
func (c Counts) ByOp() map[string]uint64 {
	out := make(map[string]uint64)
	for k, v := range c {
		out[k.Op] += v
	}
	return out
}

// ByClass sums the counts of each class over the kinds.
func (c Counts) ByClass() map[string]uint64 {
	out := make(map[string]uint64)
	for k, v := range c {
		out[k.Class] += v
	}
	return out
}

// Sub returns c − before, cell by cell (for counts taken from one Mount).
func (c Counts) Sub(before Counts) Counts {
	out := make(Counts, len(c))
	for k, v := range c {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// String lists the cells, largest first, as "op/class=N".
func (c Counts) String() string {
	keys := slices.Collect(maps.Keys(c))
	slices.SortFunc(keys, func(a, b Key) int {
		if c[a] != c[b] {
			if c[a] > c[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Op+"/"+a.Class, b.Op+"/"+b.Class)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s/%s=%d", k.Op, k.Class, c[k]))
	}
	return strings.Join(parts, " ")
}

// Options are a mount's kernel caches and how paths are classed.
type Options struct {
	// AttrTimeout, EntryTimeout and NegativeTimeout are how long the
	// kernel may answer getattr and lookup (found, not found) from its
	// cache. Zero values mean bindfs's defaults, which collab's host views
	// use: 1 s, 1 s and 0 (see [BindfsLike]); [NFSLike] is nfs(5)'s
	// defaults.
	AttrTimeout, EntryTimeout, NegativeTimeout time.Duration
	// Classify names the class of a path relative to the mount's root
	// ("" for the root, slash-separated). Nil means [TreeClass].
	Classify func(rel string) string
}

// BindfsLike are the caches of bindfs's defaults (libfuse's): attributes and
// entries 1 s, no negative entries. collab's bench and tests mount their
// host views so.
func BindfsLike() Options {
	return Options{AttrTimeout: time.Second, EntryTimeout: time.Second, NegativeTimeout: -1}
}

// NFSLike are the caches of a Linux NFS client's defaults, as far as FUSE
// has them (nfs(5): acregmin 3 s, acdirmin 30 s; negative lookups cached
// as long): attributes 3 s, entries and negative entries 30 s. FUSE has one
// attribute timeout for files and folders alike.
func NFSLike() Options {
	return Options{AttrTimeout: 3 * time.Second, EntryTimeout: 30 * time.Second, NegativeTimeout: 30 * time.Second}
}

// TreeClass classes a path of a collab tree by its folder: "channel" (a
// channel's folder and its messages), "channels" (the folder of channels),
// "claims", "presence", "state" (agents' state, cursors, jobs, outboxes),
// "logs", "keys", "registry", "root" (the tree's folder itself), or
// otherwise the path's first element.
func TreeClass(rel string) string {
	if rel == "" || rel == "." {
		return "root"
	}
	elems := strings.Split(rel, "/")
	switch {
	case elems[0] == "channels" && len(elems) == 1:
		return "channels"
	case elems[0] == "channels":
		return "channel"
	case elems[0] == "signals" && len(elems) > 1:
		return elems[1]
	}
	return elems[0]
}

// Available reports why a mount cannot be made here, or nil: /dev/fuse must
// exist and fusermount3 or fusermount be on $PATH (it opens /dev/fuse for
// an account that may not). A mount can still fail; [New] says why.
func Available() error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("fusecount: %w", err)
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		if _, err2 := exec.LookPath("fusermount"); err2 != nil {
			return errors.New("fusecount: neither fusermount3 nor fusermount is on $PATH")
		}
	}
	return nil
}

// Mount is a mounted counting view of a folder.
type Mount struct {
	Dir    string // where it is mounted
	server *fuse.Server
	raw    *counting
}

// New mounts a counting loopback view of backing at the folder at (created
// if missing) and returns once the kernel has it.
func New(backing, at string, o Options) (*Mount, error) {
	if err := os.MkdirAll(at, 0o755); err != nil {
		return nil, err
	}
	root, err := newRoot(backing)
	if err != nil {
		return nil, err
	}
	def := BindfsLike()
	attr, entry, neg := orDefault(o.AttrTimeout, def.AttrTimeout), orDefault(o.EntryTimeout, def.EntryTimeout), orDefault(o.NegativeTimeout, def.NegativeTimeout)
	opts := &fs.Options{
		AttrTimeout: &attr, EntryTimeout: &entry, NegativeTimeout: &neg,
		// No READDIRPLUS (as bindfs): every node the kernel uses then comes
		// from a lookup or create, which is how a request's path is known.
		MountOptions: fuse.MountOptions{FsName: backing, Name: "fusecount", MaxBackground: 64, DisableReadDirPlus: true},
	}
	classify := o.Classify
	if classify == nil {
		classify = TreeClass
	}
	raw := &counting{RawFileSystem: fs.NewNodeFS(root, opts), classify: classify,
		paths: map[uint64]string{fuse.FUSE_ROOT_ID: ""}, counts: make(Counts)}
	server, err := fuse.NewServer(raw, at, &opts.MountOptions)
	if err != nil {
		return nil, fmt.Errorf("fusecount: mount %s: %w", at, err)
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		server.Unmount()
		return nil, fmt.Errorf("fusecount: mount %s: %w", at, err)
	}
	return &Mount{Dir: at, server: server, raw: raw}, nil
}

// orDefault is d when v is zero, and 0 when v is negative.
func orDefault(v, d time.Duration) time.Duration {
	switch {
	case v == 0:
		return max(d, 0)
	case v < 0:
		return 0
	}
	return v
}

// Counts returns the requests counted so far.
func (m *Mount) Counts() Counts { return m.raw.snapshot() }

// Reset sets every count to zero.
func (m *Mount) Reset() { m.raw.reset() }

// Unmount unmounts the view and waits for its server to end.
func (m *Mount) Unmount() error {
	var err error
	for range 50 {
		if err = m.server.Unmount(); err == nil {
			m.server.Wait()
			return nil
		}
		time.Sleep(100 * time.Millisecond) // busy: a file still open
	}
	return fmt.Errorf("fusecount: unmount %s: %w", m.Dir, err)
}

// counting is a fuse.RawFileSystem that counts the requests it passes on.
type counting struct {
	fuse.RawFileSystem
	classify func(string) string

	mu     sync.Mutex
	paths  map[uint64]string // node id → path relative to the root
	counts Counts
}

func (c *counting) count(op string, node uint64) {
	c.mu.Lock()
	c.counts[Key{op, c.classify(c.paths[node])}]++
	c.mu.Unlock()
}

// learn records the path of a node a reply named, child of parent.
func (c *counting) learn(parent uint64, name string, out *fuse.EntryOut, st fuse.Status) {
	if !st.Ok() || out.NodeId == 0 {
		return
	}
	c.mu.Lock()
	c.paths[out.NodeId] = path.Join(c.paths[parent], name)
	c.mu.Unlock()
}

func (c *counting) snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

func (c *counting) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = make(Counts)
}

// serverKinds are the kinds of request a Linux NFS client sends its server
// an RPC for (NFSv3 names: LOOKUP, GETATTR, SETATTR, ACCESS, READDIR, READ,
// WRITE, CREATE, MKDIR, REMOVE, RMDIR, RENAME, LINK, SYMLINK, READLINK,
// COMMIT, FSSTAT; an open is the GETATTR of close-to-open, an NFSv4 OPEN).
// The others are FUSE's own: opendir, releasedir, release and flush have
// no RPC (flush's dirty data is already counted as writes), nor have the
// getxattr of security.capability the kernel asks before a write, or
// lseek.
var serverKinds = map[string]bool{
	"lookup": true, "getattr": true, "setattr": true, "access": true, "readdir": true,
	"open": true, "read": true, "write": true, "create": true, "mkdir": true,
	"unlink": true, "rmdir": true, "rename": true, "link": true, "symlink": true,
	"readlink": true, "fsync": true, "statfs": true, "lock": true,
}

// Server keeps the kinds of request an NFS client would send its server
// an RPC for (see the list above), dropping FUSE's own.
func (c Counts) Server() Counts {
	out := make(Counts, len(c))
	for k, v := range c {
		if serverKinds[k.Op] {
			out[k] = v
		}
	}
	return out
}
