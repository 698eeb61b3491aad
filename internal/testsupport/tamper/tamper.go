// Package tamper changes a file of the tree the way someone who can write
// it would, for the tests of what readers then make of it.
//
// It is for tests only: its functions fail the test they are given.
package tamper

import (
	"encoding/json"
	"os"
	"testing"
)

// JSON reads the JSON object in the file at path, lets edit change it
// (the top-level members, by name), and writes it back in place.
func JSON(t testing.TB, path string, edit func(top map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	edit(top)
	if data, err = json.Marshal(top); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Metadata is JSON for the "metadata" object of a message file.
func Metadata(t testing.TB, path string, edit func(md map[string]any)) {
	t.Helper()
	JSON(t, path, func(top map[string]any) {
		md, ok := top["metadata"].(map[string]any)
		if !ok {
			md = map[string]any{}
			top["metadata"] = md
		}
		edit(md)
	})
}
