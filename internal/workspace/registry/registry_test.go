package registry

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    Agent
		wantErr bool
	}{
		{"full", `{"id":"codex","role":"reviewer","host":"vm-2"}`, Agent{ID: "codex", Role: "reviewer", Host: "vm-2"}, false},
		{"id from file name", `{"role":"qc"}`, Agent{ID: "codex", Role: "qc"}, false},
		{"null id", `{"id":null}`, Agent{ID: "codex"}, false},
		{"empty object", `{}`, Agent{ID: "codex"}, false},
		{"extra kept", `{"cli":"codex","models":["a"]}`, Agent{ID: "codex", Extra: map[string]json.RawMessage{
			"cli": json.RawMessage(`"codex"`), "models": json.RawMessage(`["a"]`)}}, false},
		{"other id", `{"id":"claude"}`, Agent{}, true},
		{"role not a string", `{"role":1}`, Agent{}, true},
		{"array", `[]`, Agent{}, true},
		{"null", `null`, Agent{}, true},
		{"not json", `id: codex`, Agent{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decode([]byte(tt.data), "codex")
			if tt.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("decode error = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decode = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestList(t *testing.T) {
	root := tree.Root(t.TempDir())
	agents, skips, err := List(root)
	if err != nil || agents != nil || skips != nil {
		t.Fatalf("List of a missing folder = %v, %v, %v; want nothing", agents, skips, err)
	}

	dir := root.Registry()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	put := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	put("qc-1.json", `{"role":"qc"}`)
	put("codex.json", `{"id":"codex","role":"reviewer","host":"vm-2"}`)
	put(".codex.json.ab12.tmp", `{`)
	put("README", `agents live here`)
	put("broken.json", `{"id":`)
	put("bad name.json", `{}`)
	put("big.json", `{"x":"`+strings.Repeat("x", MaxSize)+`"}`)
	if err := os.Symlink("codex.json", filepath.Join(dir, "alias.json")); err != nil {
		t.Fatal(err)
	}

	agents, skips, err = List(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Agent{{ID: "codex", Role: "reviewer", Host: "vm-2"}, {ID: "qc-1", Role: "qc"}}
	if !reflect.DeepEqual(agents, want) {
		t.Errorf("agents = %+v, want %+v", agents, want)
	}
	got := map[string]string{}
	for _, s := range skips {
		got[s.File] = s.String()
	}
	wantSkips := map[string]string{
		"broken.json":   "malformed",
		"bad name.json": "invalid name",
		"big.json":      "too large",
		"alias.json":    "symbolic link",
	}
	for file, msg := range wantSkips {
		if !strings.Contains(got[file], msg) {
			t.Errorf("skip of %s = %q, want it to say %q", file, got[file], msg)
		}
	}
	if len(skips) != len(wantSkips) {
		t.Errorf("skips = %v, want %d", skips, len(wantSkips))
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"id":"a","role":"r","host":"h"}`, `{"x":[1]}`, `[]`, `null`, `{"id":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := decode(data, "a")
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if a.ID != "a" {
			t.Fatalf("ID = %q, want the file's agent", a.ID)
		}
		for _, k := range []string{"id", "role", "host"} {
			if _, ok := a.Extra[k]; ok {
				t.Fatalf("Extra holds %q", k)
			}
		}
	})
}
