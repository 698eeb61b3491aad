// Package documents keeps a channel's shared documents: the files under
// ROOT/docs/CHANNEL (docs/protocol.md#the-shared-tree) that agents read and edit together, with
// notes.md as the entry point ([EntryPoint]) and any number of other files
// and subfolders.
//
// # Paths
//
// A document is named by a relative, slash-separated path such as
// "notes.md" or "findings/auth.md" ([CheckPath]): at most [MaxDepth]
// elements of 1-[MaxElemLen] characters of [A-Za-z0-9._-], none starting
// with '.' or '-', at most [MaxPathLen] bytes in all. So "..", absolute
// paths, empty elements, backslashes and dot-files are refused before any
// file is touched, and the dot-files the package keeps for itself (temp
// files and locks) cannot be named. The channel's folder is reached with no
// symbolic link followed below ROOT (safedir), and every file access goes
// through an [os.Root] opened on that folder. A path through a symbolic
// link inside the folder (to a file or a folder) is refused with
// [ErrSymlink] by every operation, reads as writes, so a read and a write
// of one path never reach different files.
//
// # Writes
//
// Readers never lock: every change is written to a dot-prefixed temp file
// (O_EXCL), fsynced, closed and renamed over the document, and the folder is
// fsynced, so a reader sees the old content or the new, never a mix. A
// document that did not exist is published with link(2), which never
// replaces a file, so [Folder.Create] fails with [fs.ErrExist] when the name
// is taken, by us or by anyone.
//
// A document's version ([Version]) is a SHA-256 hash of its content: the
// same on every host whatever the clocks and attribute caches say, unlike an
// mtime. [Folder.Write] with a version refuses with [ErrConflict] when the
// document changed since that version was read (a lost update).
//
// # Locking, and why appends are not O_APPEND
//
// NFS has no O_APPEND across clients: two hosts appending at once can
// overwrite each other's bytes. Nor can a version check and a rename be made
// one step. So every change to a document (write, append, create, delete)
// is made under a per-document lock file, ".NAME.lock" next to it, taken the
// NFS-safe way Dovecot takes its dotlocks: a unique file is written and
// link(2)ed to the lock name, which succeeds for exactly one host; an
// EEXIST whose link count shows that the link was made anyway (a lost NFS
// reply) counts as success. Append then reads the document, adds the text
// and writes the result as above, so appenders on any number of hosts are
// serialised and none is lost. Append-as-fragments merged on read was the
// alternative; it would make the file on disk differ from what agents read
// and would still need a lock to fold fragments back in.
//
// A lock is held for one read and one write, milliseconds. A lock left by a
// crashed writer is taken over once it is older than [Options.LockStale]
// (default 30 s). Its age is measured on the file server's clock (the
// lock's mtime against that of the waiter's own just-written file) plus the
// time the waiter itself has watched it, so skewed host clocks neither
// break a live lock nor keep a dead one. Takeover renames the lock aside
// (one waiter wins the rename), checks that it moved the lock it judged
// stale and only then removes it; if it moved a fresh lock by mistake it
// links it back. Before committing, a holder checks that the lock still
// names it and otherwise fails with [ErrLockLost] without writing. A writer
// frozen for longer than LockStale between that check and its rename (an
// NFS server outage) could still overwrite one update; nothing else can.
//
// The lock orders the writers; it does not make a client's caches fresh.
// A writer renames new content over a document, and a host whose attribute
// or page cache still describes the old file would read the old content and
// write it back without the last append. So documents are read with O_DIRECT
// where the filesystem allows it (NFS and FUSE do; then the read goes to the
// server), retried on ESTALE, and read normally where O_DIRECT is refused.
// The two-mount test loses appends without this.
//
// Processes that edit the files directly (an editor, a script) do not take
// the lock. Their edits are seen, and a version check still catches them.
//
// # Leftovers
//
// A crash can leave dot-files (".NAME.RANDOM.tmp", ".NAME.lock.TOKEN"):
// [Folder.List] hides them, and every change to a document removes those
// of its folder that are older than 36 hours.
package documents
