package documents_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/documents"
)

func Example() {
	root, _ := os.MkdirTemp("", "collab")
	defer os.RemoveAll(root)
	ctx := context.Background()
	f, err := documents.New(tree.Root(root), "dev", documents.Options{})
	if err != nil {
		panic(err)
	}
	f.Create(ctx, documents.EntryPoint, "# Notes\n")
	f.Append(ctx, documents.EntryPoint, "- auth: token not checked\n")

	d, _ := f.Read(documents.EntryPoint)
	fmt.Print(d.Content)
	// Someone else changes the file; a write based on the old version is refused.
	f.Write(ctx, documents.EntryPoint, "# Notes\n(rewritten)\n", d.Version)
	_, err = f.Write(ctx, documents.EntryPoint, "# Mine\n", d.Version)
	fmt.Println(errors.Is(err, documents.ErrConflict))
	// Output:
	// # Notes
	// - auth: token not checked
	// true
}
