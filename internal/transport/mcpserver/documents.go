package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/documents"
)

// DocArgs are document_read's arguments.
type DocArgs struct {
	File string `json:"file,omitempty" jsonschema:"the document, a relative path such as notes.md or findings/auth.md (default: notes.md, the entry point)"`
}

// Document is a document as document_read returns it.
type Document struct {
	File    string `json:"file"`
	Content string `json:"content"`
	// Version identifies this content; pass it as if_version to
	// document_write so that a change made meanwhile is not overwritten.
	Version  string    `json:"version"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// DocWriteArgs are document_write's arguments.
type DocWriteArgs struct {
	File      string `json:"file,omitempty" jsonschema:"the document (default: notes.md)"`
	Content   string `json:"content" jsonschema:"the new content; it replaces the whole document"`
	IfVersion string `json:"if_version,omitempty" jsonschema:"write only if the document is still at this version (from document_read); otherwise fail and leave it alone"`
}

// DocAppendArgs are document_append's arguments.
type DocAppendArgs struct {
	File    string `json:"file,omitempty" jsonschema:"the document (default: notes.md)"`
	Content string `json:"content" jsonschema:"the text to add at the end; include the newline you want"`
}

// DocCreateArgs are document_create's arguments.
type DocCreateArgs struct {
	File    string `json:"file" jsonschema:"the new document, a relative path such as findings/auth.md"`
	Content string `json:"content" jsonschema:"its first content"`
}

// DocWriteResult is what document_write, document_append and
// document_create return.
type DocWriteResult struct {
	File    string `json:"file"`
	Version string `json:"version"` // the new version
}

// DocDeleteArgs are document_delete's arguments.
type DocDeleteArgs struct {
	File      string `json:"file" jsonschema:"the document to delete, a relative path such as findings/auth.md"`
	IfVersion string `json:"if_version,omitempty" jsonschema:"delete only if the document is still at this version (from document_read)"`
}

// DocDeleteResult is what document_delete returns.
type DocDeleteResult struct {
	File    string `json:"file"`
	Deleted bool   `json:"deleted"`
}

// DocListArgs are document_list's arguments: none.
type DocListArgs struct{}

// DocListResult is what document_list returns.
type DocListResult struct {
	Channel   string            `json:"channel"`
	Documents []documents.Entry `json:"documents"`
}

// addDocumentTools registers the tools over the channel's shared
// documents (service.Workspace.Doc).
func addDocumentTools(s *Server) error {
	d := docTools{s: s}
	addTool(s, "document_read", "Read one of the channel's shared documents, with its version.", d.read)
	addTool(s, "document_write", "Replace a shared document's content (creating it if missing). "+
		"Pass if_version from document_read so that someone else's change made meanwhile is not lost.", d.write)
	addTool(s, "document_append", "Add text to the end of a shared document (creating it if missing); safe while others append.", d.append)
	addTool(s, "document_list", "List the channel's shared documents.",
		func(ctx context.Context, _ DocListArgs) (DocListResult, error) {
			r, err := d.do(ctx, service.DocRequest{Action: "list"})
			if err != nil {
				return DocListResult{}, err
			}
			return DocListResult{Channel: s.cfg.Channel, Documents: r.Entries}, nil
		})
	addTool(s, "document_create", "Create a new shared document; fails if it exists.", d.create)
	addTool(s, "document_delete", "Delete a shared document. Pass if_version from document_read so that a change made meanwhile is not lost.", d.delete)
	return nil
}

type docTools struct{ s *Server }

// do is the one call of a document tool, as the agent on its channel.
func (d docTools) do(ctx context.Context, req service.DocRequest) (service.DocResult, error) {
	req.Channel = d.s.cfg.Channel
	r, err := d.s.svc.Doc(ctx, service.Actor{Name: d.s.cfg.Agent, Signer: d.s.cfg.Signer, Mode: channel.ModeMCP}, req)
	if r.Entries == nil && req.Action == "list" {
		r.Entries = []documents.Entry{}
	}
	return r, err
}

func (d docTools) read(ctx context.Context, in DocArgs) (Document, error) {
	r, err := d.do(ctx, service.DocRequest{Action: "read", File: in.File})
	if errkind.Is(err, errkind.NotFound) {
		return Document{}, fmt.Errorf("no document %s (document_list shows them; document_create makes one)", r.File)
	}
	if err != nil {
		return Document{}, err
	}
	doc := r.Doc
	return Document{File: doc.File, Content: doc.Content, Version: doc.Version, Size: doc.Size, Modified: doc.Modified}, nil
}

func (d docTools) write(ctx context.Context, in DocWriteArgs) (DocWriteResult, error) {
	// A conflict's message names the current version.
	return d.change(ctx, service.DocRequest{Action: "write", File: in.File, Content: in.Content, IfVersion: in.IfVersion})
}

func (d docTools) append(ctx context.Context, in DocAppendArgs) (DocWriteResult, error) {
	if in.Content == "" {
		return DocWriteResult{}, errors.New("content is empty")
	}
	return d.change(ctx, service.DocRequest{Action: "append", File: in.File, Content: in.Content})
}

func (d docTools) create(ctx context.Context, in DocCreateArgs) (DocWriteResult, error) {
	if in.File == "" {
		return DocWriteResult{}, errors.New("file is required")
	}
	r, err := d.change(ctx, service.DocRequest{Action: "create", File: in.File, Content: in.Content})
	if errkind.Is(err, errkind.Conflict) {
		return DocWriteResult{}, fmt.Errorf("%s exists already (document_write changes it)", in.File)
	}
	return r, err
}

func (d docTools) delete(ctx context.Context, in DocDeleteArgs) (DocDeleteResult, error) {
	if in.File == "" {
		return DocDeleteResult{}, errors.New("file is required")
	}
	r, err := d.do(ctx, service.DocRequest{Action: "delete", File: in.File, IfVersion: in.IfVersion})
	if errkind.Is(err, errkind.NotFound) {
		return DocDeleteResult{}, fmt.Errorf("no document %s (document_list shows them)", in.File)
	}
	if err != nil {
		return DocDeleteResult{}, err
	}
	return DocDeleteResult{File: r.File, Deleted: true}, nil
}

func (d docTools) change(ctx context.Context, req service.DocRequest) (DocWriteResult, error) {
	r, err := d.do(ctx, req)
	if err != nil {
		return DocWriteResult{}, err
	}
	return DocWriteResult{File: r.File, Version: r.Version}, nil
}
