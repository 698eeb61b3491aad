package bridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/documents"
)

// The doc op: a channel's shared documents (package documents), as
// `collab doc` reads and changes them, performed on the mount with the
// same documents.Folder calls.
//
//	doc {"action": A, "channel": C, "file": F, "content": T, "if_version": V}
//	    -> {"ok": true, "doc": DOC} (read)
//	    -> {"ok": true, "entries": [ENTRY, ...], "more": bool} (list)
//	    -> {"ok": true, "version": V} (write, append, create)
//	    -> {"ok": true} (delete)
//
// A is one of [DocActions]. F defaults to documents.EntryPoint. A write
// with if_version is checked on the mount, under the document's lock: a
// document no longer at V is refused with [CodeConflict] and the reply's
// "version" is the document's current one ("" when it no longer exists),
// so the writer reads again. create on an existing file is CodeConflict
// too. Documents are not signed: the acting agent (the subject's AGENT,
// which the NATS permissions bind to the remote host's credentials) is
// logged by the bridge as the author of each change, and nothing in the
// file records it, as on the mount. A document too large for a reply is
// refused as [CodeInvalid]: read it on the mount.
const OpDoc = "doc"

// DocActions are the actions of the doc op.
var DocActions = []string{"read", "list", "write", "append", "create", "delete"}

// DocRequest is a doc op's request.
type DocRequest struct {
	Action    string `json:"action"`
	Channel   string `json:"channel"`
	File      string `json:"file,omitempty"`
	Content   string `json:"content,omitempty"`
	IfVersion string `json:"if_version,omitempty"`
}

// DocReply answers a doc op.
type DocReply struct {
	Reply
	Doc     *documents.Doc    `json:"doc,omitempty"`
	Entries []documents.Entry `json:"entries,omitempty"`
	More    bool              `json:"more,omitempty"`
	Version string            `json:"version,omitempty"`
}

func (s *Server) doc(agent string, data []byte) (any, error) {
	var req DocRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	known := false
	for _, a := range DocActions {
		known = known || a == req.Action
	}
	if !known {
		return nil, Errorf(CodeInvalid, "doc: unknown action %q", tree.Printable(req.Action))
	}
	if err := tree.CheckName("channel", req.Channel); err != nil {
		return nil, Errorf(CodeInvalid, "doc: %v", err)
	}
	file := req.File
	if file == "" {
		file = documents.EntryPoint
	}
	if err := documents.CheckPath(file); err != nil {
		return nil, Errorf(CodeInvalid, "doc: %v", err)
	}
	writes := req.Action == "write" || req.Action == "append" || req.Action == "create"
	switch {
	case req.IfVersion != "" && req.Action != "write" && req.Action != "delete":
		return nil, Errorf(CodeInvalid, "doc %s: if_version is for write and delete", req.Action)
	case req.Content != "" && !writes:
		return nil, Errorf(CodeInvalid, "doc %s: content is for write, append and create", req.Action)
	case (req.Action == "create" || req.Action == "delete") && req.File == "":
		return nil, Errorf(CodeInvalid, "doc %s: name the file", req.Action)
	case req.Action == "list" && req.File != "":
		return nil, Errorf(CodeInvalid, "doc list: no file")
	}
	f, err := documents.New(s.cfg.Root, req.Channel, documents.Options{Host: s.cfg.Host})
	if err != nil {
		return nil, Errorf(CodeInvalid, "doc: %v", err)
	}
	ctx := context.Background()
	out := DocReply{Reply: Reply{OK: true}}
	switch req.Action {
	case "read":
		d, err := f.Read(file)
		if err != nil {
			return nil, docFailure("read", err)
		}
		if len(d.Content)+len(d.File)+replyRoom > s.cfg.MaxReply {
			return nil, Errorf(CodeInvalid, "doc read: %s is %d bytes, larger than a bridge reply: read it on the mount", file, len(d.Content))
		}
		out.Doc = &d
		return out, nil
	case "list":
		list, err := f.List()
		if err != nil {
			return nil, docFailure("list", err)
		}
		out.Entries = []documents.Entry{}
		size := replyRoom
		for _, e := range list {
			n := len(e.File) + 96 // the entry's JSON besides its name
			if size+n > s.cfg.MaxReply {
				out.More = true
				break
			}
			size += n
			out.Entries = append(out.Entries, e)
		}
		return out, nil
	case "delete":
		if err := f.Delete(ctx, file, req.IfVersion); err != nil {
			return s.docConflict("delete", agent, f, file, err)
		}
		s.log.Info("bridge: document deleted", "channel", req.Channel, "file", file, "agent", agent)
		return out, nil
	}
	var version string
	switch req.Action {
	case "write":
		version, err = f.Write(ctx, file, req.Content, req.IfVersion)
	case "append":
		version, err = f.Append(ctx, file, req.Content)
	case "create":
		version, err = f.Create(ctx, file, req.Content)
	}
	if err != nil {
		return s.docConflict(req.Action, agent, f, file, err)
	}
	s.log.Info("bridge: document changed", "action", req.Action, "channel", req.Channel, "file", file, "version", version, "agent", agent)
	out.Version = version
	return out, nil
}

// docConflict answers a failed change: a conflict with the document's
// current version, other failures coded.
func (s *Server) docConflict(action, agent string, f *documents.Folder, file string, err error) (any, error) {
	if !errors.Is(err, documents.ErrConflict) && !(action == "create" && errors.Is(err, fs.ErrExist)) {
		return nil, docFailure(action, err)
	}
	out := DocReply{Reply: Reply{Code: CodeConflict, Error: fmt.Sprintf("doc %s: %v", action, err)}}
	if d, rerr := f.Read(file); rerr == nil {
		out.Version = d.Version
	}
	s.log.Info("bridge: request refused", "op", OpDoc, "agent", agent, "code", CodeConflict, "err", out.Error)
	return out, nil
}

// docFailure codes a documents error.
func docFailure(action string, err error) error {
	switch {
	case errors.Is(err, documents.ErrBadPath), errors.Is(err, documents.ErrTooLarge),
		errors.Is(err, documents.ErrSymlink), errors.Is(err, documents.ErrNotRegular):
		return Errorf(CodeInvalid, "doc %s: %v", action, err)
	case errors.Is(err, documents.ErrLockBusy), errors.Is(err, documents.ErrLockLost):
		return Errorf(CodeUnavailable, "doc %s: %v", action, err)
	}
	return classify("doc "+action, err)
}
