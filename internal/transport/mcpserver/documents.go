package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

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

// DocListArgs are document_list's arguments: none.
type DocListArgs struct{}

// DocListResult is what document_list returns.
type DocListResult struct {
	Channel   string            `json:"channel"`
	Documents []documents.Entry `json:"documents"`
}

// addDocumentTools registers the tools over the channel's shared
// documents (package documents).
func addDocumentTools(s *Server) error {
	f, err := s.store.documents(s.cfg.Channel)
	if err != nil {
		return err
	}
	d := docTools{f: f}
	addTool(s, "document_read", "Read one of the channel's shared documents, with its version.", d.read)
	addTool(s, "document_write", "Replace a shared document's content (creating it if missing). "+
		"Pass if_version from document_read so that someone else's change made meanwhile is not lost.", d.write)
	addTool(s, "document_append", "Add text to the end of a shared document (creating it if missing); safe while others append.", d.append)
	addTool(s, "document_list", "List the channel's shared documents.",
		func(ctx context.Context, _ DocListArgs) (DocListResult, error) {
			list, err := f.List(ctx)
			if err != nil {
				return DocListResult{}, err
			}
			if list == nil {
				list = []documents.Entry{}
			}
			return DocListResult{Channel: s.cfg.Channel, Documents: list}, nil
		})
	addTool(s, "document_create", "Create a new shared document; fails if it exists.", d.create)
	return nil
}

type docTools struct{ f docStore }

// file returns the document a call names, the entry point by default.
func docFile(name string) string {
	if name == "" {
		return documents.EntryPoint
	}
	return name
}

func (d docTools) read(ctx context.Context, in DocArgs) (Document, error) {
	doc, err := d.f.Read(ctx, docFile(in.File))
	if errors.Is(err, fs.ErrNotExist) {
		return Document{}, fmt.Errorf("no document %s (document_list shows them; document_create makes one)", docFile(in.File))
	}
	if err != nil {
		return Document{}, err
	}
	return Document{File: doc.File, Content: doc.Content, Version: doc.Version, Size: doc.Size, Modified: doc.Modified}, nil
}

func (d docTools) write(ctx context.Context, in DocWriteArgs) (DocWriteResult, error) {
	v, err := d.f.Write(ctx, docFile(in.File), in.Content, in.IfVersion)
	if err != nil {
		// A conflict's message names the current version.
		return DocWriteResult{}, err
	}
	return DocWriteResult{File: docFile(in.File), Version: v}, nil
}

func (d docTools) append(ctx context.Context, in DocAppendArgs) (DocWriteResult, error) {
	if in.Content == "" {
		return DocWriteResult{}, errors.New("content is empty")
	}
	v, err := d.f.Append(ctx, docFile(in.File), in.Content)
	if err != nil {
		return DocWriteResult{}, err
	}
	return DocWriteResult{File: docFile(in.File), Version: v}, nil
}

func (d docTools) create(ctx context.Context, in DocCreateArgs) (DocWriteResult, error) {
	if in.File == "" {
		return DocWriteResult{}, errors.New("file is required")
	}
	v, err := d.f.Create(ctx, in.File, in.Content)
	if errors.Is(err, fs.ErrExist) {
		return DocWriteResult{}, fmt.Errorf("%s exists already (document_write changes it)", in.File)
	}
	if err != nil {
		return DocWriteResult{}, err
	}
	return DocWriteResult{File: in.File, Version: v}, nil
}
