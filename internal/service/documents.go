package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/documents"
)

// DocActions are the actions of Doc.
var DocActions = []string{"read", "list", "write", "append", "create", "delete"}

// DocRequest is one action on a channel's shared documents.
type DocRequest struct {
	Action  string // one of DocActions
	Channel string
	// File is a path inside the channel's documents folder; "" is the
	// entry point (documents.EntryPoint), except for create and delete,
	// which must name it, and list, which takes none.
	File      string
	Content   string // write, append, create
	IfVersion string // write, delete: only if the file is at this version
}

// DocResult is what Doc returns: the document (read), the listing
// (list), or the new version (write, append, create). With a Conflict
// error, Version is the document's version now ("" when it is gone).
type DocResult struct {
	File    string
	Doc     *documents.Doc
	Entries []documents.Entry
	// More: the listing was cut (a bridge reply's bound).
	More    bool
	Version string
}

// Writes reports whether action changes a document's content.
func (r DocRequest) Writes() bool {
	return r.Action == "write" || r.Action == "append" || r.Action == "create"
}

// Check applies the rules of a doc request that need no tree, and
// returns the file it names. Every error is Invalid.
func (r DocRequest) Check() (string, error) {
	if !slices.Contains(DocActions, r.Action) {
		return "", errkind.New(errkind.Invalid, "unknown action %q", tree.Printable(r.Action))
	}
	if err := tree.CheckName("channel", r.Channel); err != nil {
		return "", errkind.Wrap(errkind.Invalid, err)
	}
	file := r.File
	if file == "" {
		file = documents.EntryPoint
	}
	switch {
	case r.IfVersion != "" && r.Action != "write" && r.Action != "delete":
		return "", errkind.New(errkind.Invalid, "if_version is for write and delete")
	case r.Content != "" && !r.Writes():
		return "", errkind.New(errkind.Invalid, "content is for write, append and create")
	case (r.Action == "create" || r.Action == "delete") && r.File == "":
		return "", errkind.New(errkind.Invalid, "name the file")
	case r.Action == "list" && r.File != "":
		return "", errkind.New(errkind.Invalid, "list: no file")
	}
	if err := documents.CheckPath(file); err != nil {
		return "", errkind.Wrap(errkind.Invalid, err)
	}
	return file, nil
}

// Doc implements Workspace.
func (m *Mount) Doc(ctx context.Context, a Actor, req DocRequest) (DocResult, error) {
	file, err := req.Check()
	if err != nil {
		return DocResult{}, err
	}
	f, err := documents.New(m.cfg.Root, req.Channel, documents.Options{Host: m.cfg.Host})
	if err != nil {
		return DocResult{}, errkind.Wrap(errkind.Invalid, err)
	}
	res := DocResult{File: file}
	switch req.Action {
	case "read":
		d, err := f.Read(file)
		if err != nil {
			return res, docError(req, file, err)
		}
		res.Doc = &d
		return res, nil
	case "list":
		res.Entries, err = f.List()
		if res.Entries == nil {
			res.Entries = []documents.Entry{}
		}
		return res, docError(req, file, err)
	case "delete":
		err = f.Delete(ctx, file, req.IfVersion)
	case "write":
		res.Version, err = f.Write(ctx, file, req.Content, req.IfVersion)
	case "append":
		res.Version, err = f.Append(ctx, file, req.Content)
	case "create":
		res.Version, err = f.Create(ctx, file, req.Content)
	}
	if err != nil {
		res.Version = ""
		if errkind.Is(docError(req, file, err), errkind.Conflict) {
			if d, rerr := f.Read(file); rerr == nil {
				res.Version = d.Version
			}
		}
		return res, docError(req, file, err)
	}
	if req.Action != "delete" {
		m.cfg.Logger.Info("document changed", "action", req.Action, "channel", req.Channel, "file", file, "version", res.Version, "agent", a.Name)
	}
	return res, nil
}

// docError classifies a documents error, once for every door.
func docError(req DocRequest, file string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, documents.ErrConflict):
		return errkind.Wrap(errkind.Conflict, err)
	case errors.Is(err, fs.ErrExist) && req.Action == "create":
		return errkind.Wrap(errkind.Conflict, fmt.Errorf("%s already exists in channel %s: %w", file, req.Channel, fs.ErrExist))
	case errors.Is(err, fs.ErrNotExist):
		return errkind.Wrap(errkind.NotFound, fmt.Errorf("%s does not exist in channel %s: %w", file, req.Channel, fs.ErrNotExist))
	case errors.Is(err, documents.ErrBadPath), errors.Is(err, documents.ErrTooLarge):
		return errkind.Wrap(errkind.Invalid, err)
	case errors.Is(err, documents.ErrSymlink), errors.Is(err, documents.ErrNotRegular):
		return errkind.Wrap(errkind.Forbidden, err)
	case errors.Is(err, documents.ErrLockBusy), errors.Is(err, documents.ErrLockLost):
		return errkind.Wrap(errkind.Unavailable, err)
	}
	return errkind.Wrap(errkind.Failed, err)
}
