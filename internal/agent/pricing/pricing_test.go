package pricing

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

func TestLookup(t *testing.T) {
	tab := Default()
	tests := []struct {
		model string
		want  Price
		ok    bool
	}{
		{"gpt-5", Price{1.25, 10, 0.125}, true},
		{"GPT-5", Price{1.25, 10, 0.125}, true},
		{"gpt-5-2025-08-07", Price{1.25, 10, 0.125}, true},
		{"gpt-5-mini", Price{0.25, 2, 0.025}, true},
		{"claude-sonnet-4-5-20250929", Price{3, 15, 0.3}, true},
		{"gemini-2.5-flash", Price{0.3, 2.5, 0.03}, true},
		{"gemini-2.5-flash-lite", Price{0.1, 0.4, 0.01}, true},
		{"gpt-5-pro", Price{}, false},       // another model, not gpt-5
		{"claude-opus-4-7", Price{}, false}, // a version, not a date
		{"gpt-5.5", Price{}, false},
		{"", Price{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			got, ok := tab.Lookup(tt.model)
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %+v %v, want %+v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCost(t *testing.T) {
	tab := Default()
	u := modelcli.Usage{Input: 1_000_000, CacheRead: 2_000_000, Output: 100_000, Model: "gpt-5"}
	got, ok := tab.Cost(u)
	if want := 1.25 + 2*0.125 + 0.1*10; !ok || math.Abs(got-want) > 1e-9 {
		t.Errorf("cost %v %v, want %v", got, ok, want)
	}
	if _, ok := tab.Cost(modelcli.Usage{Input: 5, Model: "mystery"}); ok {
		t.Error("an unknown model was priced")
	}
	if _, ok := (*Table)(nil).Cost(u); ok {
		t.Error("a nil table priced")
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(path, []byte(`{"as_of":"2030-01-01","models":{"GPT-5":{"input":2,"output":20},"gpt-5.5":{"input":3,"output":30,"cached":0.3}}}`), 0o600)
	tab, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := tab.Lookup("gpt-5"); p != (Price{Input: 2, Output: 20}) {
		t.Errorf("override: %+v", p)
	}
	if c, _ := tab.Cost(modelcli.Usage{CacheRead: 1e6, Model: "gpt-5"}); c != 2 {
		t.Errorf("cached without a price costs %v, want the input price 2", c)
	}
	if p, ok := tab.Lookup("gpt-5.5"); !ok || p.Output != 30 {
		t.Errorf("added: %+v %v", p, ok)
	}
	if p, ok := tab.Lookup("gemini-2.5-pro"); !ok || p.Input != 1.25 {
		t.Errorf("defaults kept: %+v %v", p, ok)
	}
	if tab.AsOf != "2030-01-01" {
		t.Errorf("as of %q", tab.AsOf)
	}
	if d := Default(); d.AsOf == "" {
		t.Error("defaults have no date")
	}
	for _, bad := range []string{`{`, `{"models":{"x":{"input":-1}}}`, `{}`, `{"models":{"":{}}}`} {
		os.WriteFile(path, []byte(bad), 0o600)
		if _, err := Load(path); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing file: no error")
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(defaults)
	f.Add([]byte(`{"models":{"a":{"input":1,"output":2,"cached":0.5}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := parse(data)
		if err != nil {
			return
		}
		for name := range tab.models {
			if _, ok := tab.Lookup(name); !ok {
				t.Errorf("%q not found", name)
			}
		}
	})
}
