package service

// Where a team keeps its context: the tree (context.provider: file, the
// default), or a private tree of this process in memory
// (context.provider: memory).
//
// # The memory provider
//
// A memory instance's channel, documents, presence, claims and jobs live
// in a tree of its own that the process makes when the team opens and
// removes when it ends: a folder (mode 0700) under /dev/shm, the tmpfs
// every Linux has, so in memory; where there is none, under
// os.TempDir(). The watchers, the kickoff and the run's judge are given
// that tree's root instead of the mount's: that root is the one seam. The
// watcher machinery (the channel's reader and writer, claims, delivery
// states, presence, jobs, documents) keeps its atomic file protocol
// unchanged, and what runs outside the process still works: the model
// CLI's `collab mcp --root` child reads and writes the same tree.
// (Maps inside the process would need an interface over each of those
// packages and could not be reached by that child.)
//
// The instance's record and stop files stay in the mount's tree, so
// collab ls and collab stop see and stop it; the record's store names
// the private tree, where ls reads the agents' presence
// (workflow.StoreRoot), and a copy of the record in it gives its readers
// the agents' aliases. A person talks to a started memory team through
// that tree (COLLAB_ROOT=STORE collab send). Nothing of the store is
// published on NATS. Other
// accounts cannot read it: ls shows another account's memory instance as
// dead.
//
// A store is named collab-PID-WORKFLOW--INSTANCE-RANDOM, PID its
// process's. A process killed before it could remove its store leaves
// it: the next memory instance of this account on the host removes the
// stores whose process is gone and that are older than storeStale (a
// host's /dev/shm is its own, so the pid says whether it runs).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/documents"
)

// shmDir is the tmpfs a memory store is made in, when it is a folder
// this account can write.
const shmDir = "/dev/shm"

// memoryBase is the folder memory stores are made in.
func memoryBase() string {
	if fi, err := os.Stat(shmDir); err == nil && fi.IsDir() && unixWritable(shmDir) {
		return shmDir
	}
	return os.TempDir()
}

// unixWritable reports whether this account may make a file in dir.
func unixWritable(dir string) bool {
	f, err := os.CreateTemp(dir, ".collab-probe-")
	if err != nil {
		return false
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return true
}

// openStore sets where the team keeps its context: the mount's tree, or
// for a memory provider a new private tree, made and initialised as
// collab init makes one, whose Mount publishes nothing.
func (t *team) openStore(ctx context.Context) error {
	t.store, t.sm = t.m.cfg.Root, t.m
	if !t.file.Context.Memory() {
		return nil
	}
	base := memoryBase()
	sweepStores(base, time.Now())
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-%s%s%s-", storePrefix, os.Getpid(), t.file.Name, workflow.Sep, t.instance))
	if err != nil {
		return errkind.Wrap(errkind.Failed, fmt.Errorf("memory context: %w", err))
	}
	cfg := t.m.cfg
	cfg.Root, cfg.Publish, cfg.Wake = tree.Root(dir), nil, nil
	t.store, t.sm = cfg.Root, NewMount(cfg)
	t.record.Store = dir
	if _, err := t.sm.Init(ctx, InitRequest{}); err != nil {
		t.dropStore()
		return errkind.Wrap(errkind.Failed, fmt.Errorf("memory context: %w", err))
	}
	return nil
}

// Memory stores' names and the age after which one whose process is gone
// is removed.
const (
	storePrefix = "collab-"
	storeStale  = time.Minute
)

// sweepStores removes the memory stores in base that this account made,
// whose process is gone, older than storeStale.
func sweepStores(base string, now time.Time) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), storePrefix)
		pidText, _, found := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || !found || err != nil || !e.IsDir() || proc.PIDAlive(pid) {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) < storeStale {
			continue
		}
		if owner, _, ok := safedir.Ownership(fi); !ok || owner != os.Geteuid() {
			continue
		}
		os.RemoveAll(filepath.Join(base, e.Name()))
	}
}

// dropStore removes a memory store, once nothing runs in it.
func (t *team) dropStore() {
	if t.store == "" || t.store == t.m.cfg.Root {
		return
	}
	if err := os.RemoveAll(string(t.store)); err != nil {
		fmt.Fprintf(t.log, "collab: memory context: %v\n", err)
	}
	t.store = ""
}

// writeRecord writes the instance's record in the tree and, while it
// exists, in a memory store too.
func (t *team) writeRecord() error {
	err := workflow.WriteRecord(t.m.cfg.Root, &t.record)
	if t.store != "" && t.store != t.m.cfg.Root {
		err = errors.Join(err, workflow.WriteRecord(t.store, &t.record))
	}
	return err
}

// makeDocuments creates, empty, the documents context.config.documents
// lists that the instance's channel does not have yet.
func (t *team) makeDocuments(ctx context.Context) error {
	if t.file.Context.Off || len(t.file.Context.Documents) == 0 {
		return nil
	}
	docs, err := documents.New(t.store, t.channel, documents.Options{Host: t.m.cfg.Host})
	if err != nil {
		return errkind.Wrap(errkind.Invalid, err)
	}
	for _, d := range t.file.Context.Documents {
		if _, err := docs.Create(ctx, d, ""); err != nil && !errors.Is(err, fs.ErrExist) {
			return errkind.Wrap(errkind.Failed, fmt.Errorf("document %s: %w", d, err))
		}
	}
	return nil
}
