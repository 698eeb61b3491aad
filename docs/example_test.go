package docs_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"collab/docs"
	"collab/tree"
)

func Example() {
	root, _ := os.MkdirTemp("", "collab")
	defer os.RemoveAll(root)
	ctx := context.Background()
	f, err := docs.New(tree.Root(root), "dev", docs.Options{})
	if err != nil {
		panic(err)
	}
	f.Create(ctx, docs.EntryPoint, "# Notes\n")
	f.Append(ctx, docs.EntryPoint, "- auth: token not checked\n")

	d, _ := f.Read(docs.EntryPoint)
	fmt.Print(d.Content)
	// Someone else changes the file; a write based on the old version is refused.
	f.Write(ctx, docs.EntryPoint, "# Notes\n(rewritten)\n", d.Version)
	_, err = f.Write(ctx, docs.EntryPoint, "# Mine\n", d.Version)
	fmt.Println(errors.Is(err, docs.ErrConflict))
	// Output:
	// # Notes
	// - auth: token not checked
	// true
}
