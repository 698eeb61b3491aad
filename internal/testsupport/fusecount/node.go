package fusecount

import (
	"context"
	"fmt"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is go-fuse's loopback node whose open files never use FUSE
// passthrough: with passthrough (kernel 6.9 and later, as root) the kernel
// reads and writes the backing file itself and the reads and writes would
// go uncounted, where an NFS client sends them to the server.
type node struct{ *fs.LoopbackNode }

// WrapChild makes every node of the tree a node (fs.NodeWrapChilder).
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{ops.(*fs.LoopbackNode)}
}

// file is a loopback file that declines passthrough.
type file struct{ *fs.LoopbackFile }

// PassthroughFd declines passthrough: every read and write is a request.
func (f *file) PassthroughFd() (int, bool) { return 0, false }

func noPassthrough(fh fs.FileHandle) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return &file{lf}
	}
	return fh
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	return noPassthrough(fh), fl, errno
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return in, noPassthrough(fh), fl, errno
}

// newRoot is fs.NewLoopbackRoot with nodes that decline passthrough.
func newRoot(backing string) (fs.InodeEmbedder, error) {
	root, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, fmt.Errorf("fusecount: %w", err)
	}
	n := &node{root.(*fs.LoopbackNode)}
	n.RootData.RootNode = n // the root the loopback's paths start from
	return n, nil
}
