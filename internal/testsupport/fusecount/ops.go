package fusecount

import (
	"path"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The counted requests. A request that names a child (lookup, create,
// unlink, rename, …) is classed by the child's path, the others by their
// node's. Requests not listed here (forget, interrupt, ioctl, poll, …)
// pass on uncounted: they are the kernel's bookkeeping, with no
// counterpart on an NFS server.

// countName counts op on the child name of parent.
func (c *counting) countName(op string, parent uint64, name string) {
	c.mu.Lock()
	c.counts[Key{op, c.classify(path.Join(c.paths[parent], name))}]++
	c.mu.Unlock()
}

func (c *counting) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	c.countName("lookup", h.NodeId, name)
	st := c.RawFileSystem.Lookup(cancel, h, name, out)
	c.learn(h.NodeId, name, out, st)
	return st
}

func (c *counting) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	c.count("getattr", in.NodeId)
	return c.RawFileSystem.GetAttr(cancel, in, out)
}

func (c *counting) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	c.count("getattr", in.NodeId) // FUSE_STATX: a getattr with statx's fields
	return c.RawFileSystem.Statx(cancel, in, out)
}

func (c *counting) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	c.count("setattr", in.NodeId)
	return c.RawFileSystem.SetAttr(cancel, in, out)
}

func (c *counting) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	c.count("access", in.NodeId)
	return c.RawFileSystem.Access(cancel, in)
}

func (c *counting) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	c.countName("create", in.NodeId, name)
	st := c.RawFileSystem.Mknod(cancel, in, name, out)
	c.learn(in.NodeId, name, out, st)
	return st
}

func (c *counting) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	c.countName("mkdir", in.NodeId, name)
	st := c.RawFileSystem.Mkdir(cancel, in, name, out)
	c.learn(in.NodeId, name, out, st)
	return st
}

func (c *counting) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	c.countName("unlink", h.NodeId, name)
	return c.RawFileSystem.Unlink(cancel, h, name)
}

func (c *counting) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	c.countName("rmdir", h.NodeId, name)
	return c.RawFileSystem.Rmdir(cancel, h, name)
}

func (c *counting) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	c.countName("rename", in.Newdir, newName)
	return c.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (c *counting) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	c.countName("link", in.NodeId, name)
	st := c.RawFileSystem.Link(cancel, in, name, out)
	c.learn(in.NodeId, name, out, st)
	return st
}

func (c *counting) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	c.countName("symlink", h.NodeId, name)
	st := c.RawFileSystem.Symlink(cancel, h, target, name, out)
	c.learn(h.NodeId, name, out, st)
	return st
}

func (c *counting) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	c.count("readlink", h.NodeId)
	return c.RawFileSystem.Readlink(cancel, h)
}

func (c *counting) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	c.countName("create", in.NodeId, name)
	st := c.RawFileSystem.Create(cancel, in, name, out)
	c.learn(in.NodeId, name, &out.EntryOut, st)
	return st
}

func (c *counting) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	c.count("open", in.NodeId)
	return c.RawFileSystem.Open(cancel, in, out)
}

func (c *counting) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	c.count("read", in.NodeId)
	return c.RawFileSystem.Read(cancel, in, buf)
}

func (c *counting) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	c.count("write", in.NodeId)
	return c.RawFileSystem.Write(cancel, in, data)
}

func (c *counting) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	n, st := c.RawFileSystem.Writev(cancel, in, data)
	if st != fuse.ENOSYS { // else the server retries it as a Write
		c.count("write", in.NodeId)
	}
	return n, st
}

func (c *counting) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	c.count("flush", in.NodeId)
	return c.RawFileSystem.Flush(cancel, in)
}

func (c *counting) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	c.count("fsync", in.NodeId)
	return c.RawFileSystem.Fsync(cancel, in)
}

func (c *counting) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	c.count("release", in.NodeId)
	c.RawFileSystem.Release(cancel, in)
}

func (c *counting) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	c.count("opendir", in.NodeId)
	return c.RawFileSystem.OpenDir(cancel, in, out)
}

func (c *counting) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	c.count("readdir", in.NodeId)
	return c.RawFileSystem.ReadDir(cancel, in, out)
}

func (c *counting) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	c.count("readdir", in.NodeId) // READDIRPLUS: entries with their attributes
	return c.RawFileSystem.ReadDirPlus(cancel, in, out)
}

func (c *counting) ReleaseDir(in *fuse.ReleaseIn) {
	c.count("releasedir", in.NodeId)
	c.RawFileSystem.ReleaseDir(in)
}

func (c *counting) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	c.count("fsync", in.NodeId)
	return c.RawFileSystem.FsyncDir(cancel, in)
}

func (c *counting) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	c.count("statfs", h.NodeId)
	return c.RawFileSystem.StatFs(cancel, h, out)
}

func (c *counting) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	c.count("getxattr", h.NodeId)
	return c.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (c *counting) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	c.count("listxattr", h.NodeId)
	return c.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (c *counting) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	c.count("setxattr", in.NodeId)
	return c.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (c *counting) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	c.count("fallocate", in.NodeId)
	return c.RawFileSystem.Fallocate(cancel, in)
}

func (c *counting) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	c.count("lseek", in.NodeId)
	return c.RawFileSystem.Lseek(cancel, in, out)
}

func (c *counting) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	c.count("lock", in.NodeId)
	return c.RawFileSystem.SetLk(cancel, in)
}

func (c *counting) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	c.count("lock", in.NodeId)
	return c.RawFileSystem.SetLkw(cancel, in)
}
