package bridge

import (
	"context"
	"fmt"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/documents"
)

// The doc op: a channel's shared documents (package documents), each
// action one call of the service layer on the mount (service.Mount.Doc),
// with its rules and its refusals.
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
	r, err := s.svc.Doc(context.Background(), service.Actor{Name: agent}, service.DocRequest{Action: req.Action,
		Channel: req.Channel, File: req.File, Content: req.Content, IfVersion: req.IfVersion})
	what := "doc " + tree.Printable(req.Action)
	if errkind.Is(err, errkind.Conflict) {
		// The writer reads again: the reply names the version now.
		out := DocReply{Reply: Reply{Code: CodeConflict, Error: fmt.Sprintf("%s: %v", what, err)}, Version: r.Version}
		s.log.Info("bridge: request refused", "op", OpDoc, "agent", agent, "code", CodeConflict, "err", out.Error)
		return out, nil
	}
	if err != nil {
		return nil, classify(what, err)
	}
	out := DocReply{Reply: Reply{OK: true}, Version: r.Version}
	switch req.Action {
	case "read":
		if len(r.Doc.Content)+len(r.Doc.File)+replyRoom > s.cfg.MaxReply {
			return nil, Errorf(CodeInvalid, "doc read: %s is %d bytes, larger than a bridge reply: read it on the mount", r.File, len(r.Doc.Content))
		}
		out.Doc = r.Doc
	case "list":
		out.Entries, out.More = s.docEntries(r.Entries)
	case "delete":
		s.log.Info("bridge: document deleted", "channel", req.Channel, "file", r.File, "agent", agent)
	default:
		s.log.Info("bridge: document changed", "action", req.Action, "channel", req.Channel, "file", r.File, "version", r.Version, "agent", agent)
	}
	return out, nil
}

// docEntries is as much of a listing as a reply holds, and whether some
// was left out.
func (s *Server) docEntries(list []documents.Entry) ([]documents.Entry, bool) {
	out := []documents.Entry{}
	size := replyRoom
	for _, e := range list {
		n := len(e.File) + 96 // the entry's JSON besides its name
		if size+n > s.cfg.MaxReply {
			return out, true
		}
		size += n
		out = append(out, e)
	}
	return out, false
}
