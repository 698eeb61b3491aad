// Package pricing prices model runs from their token counts, for the CLIs
// that report tokens but no cost (Codex, Gemini CLI).
//
// # The table
//
// A price table is JSON:
//
//	{"as_of": "2025-12-01", "models": {
//	    "gpt-5": {"input": 1.25, "output": 10, "cached": 0.125}, …}}
//
// Each entry is a model's price in USD per million tokens: input (fresh
// input tokens, and cache writes), output (with reasoning tokens) and
// cached (input tokens read from the cache; 0 or absent: the input price).
// [Default] is the table shipped in defaults.json, from the vendors'
// public price pages as of its as_of date; [Load] reads a file whose
// entries replace or add to it, by model name.
//
// # Model names
//
// Names are compared without regard to case. A model not in the table by
// its own name takes the price of the longest name that is its prefix
// followed by a date (-20250929, -2025-08-07) or -latest, so dated
// snapshots cost what their alias does; any other suffix (-mini, -lite,
// -pro) is another model, which has no price until the table names it.
package pricing

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

// Price is a model's price in USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	Cached float64 `json:"cached,omitempty"` // 0: the input price
}

// Table maps model names (lower case) to prices.
type Table struct {
	AsOf   string
	models map[string]Price
}

// file is the JSON form of a table.
type file struct {
	AsOf   string           `json:"as_of"`
	Source string           `json:"source,omitempty"`
	Models map[string]Price `json:"models"`
}

//go:embed defaults.json
var defaults []byte

// Default returns the shipped table.
func Default() *Table {
	t, err := parse(defaults)
	if err != nil {
		panic("pricing: defaults.json: " + err.Error())
	}
	return t
}

// Load returns the shipped table with the entries of the file at path
// added, each replacing the default of its model; "" is the defaults
// alone.
func Load(path string) (*Table, error) {
	t := Default()
	if path == "" {
		return t, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	more, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("prices %s: %w", path, err)
	}
	for name, p := range more.models {
		t.models[name] = p
	}
	if more.AsOf != "" {
		t.AsOf = more.AsOf
	}
	return t, nil
}

// parse reads a table and checks its prices.
func parse(data []byte) (*Table, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Models == nil {
		return nil, errors.New(`no "models" object`)
	}
	t := &Table{AsOf: f.AsOf, models: make(map[string]Price, len(f.Models))}
	for name, p := range f.Models {
		if name == "" {
			return nil, errors.New("a model with no name")
		}
		if p.Input < 0 || p.Output < 0 || p.Cached < 0 {
			return nil, fmt.Errorf("model %s: negative price", name)
		}
		t.models[strings.ToLower(name)] = p
	}
	return t, nil
}

// snapshot is what may follow a priced name: a date or "latest".
var snapshot = regexp.MustCompile(`^-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$`)

// Lookup returns the price of model, and whether the table has one.
func (t *Table) Lookup(model string) (Price, bool) {
	if t == nil || model == "" {
		return Price{}, false
	}
	model = strings.ToLower(model)
	if p, ok := t.models[model]; ok {
		return p, true
	}
	best, found := "", false
	for name := range t.models {
		if len(name) > len(best) && strings.HasPrefix(model, name) && snapshot.MatchString(model[len(name):]) {
			best, found = name, true
		}
	}
	return t.models[best], found
}

// Cost returns what u cost in USD, and whether the table prices
// u.Model. Cache writes are priced as input.
func (t *Table) Cost(u modelcli.Usage) (float64, bool) {
	p, ok := t.Lookup(u.Model)
	if !ok {
		return 0, false
	}
	cached := p.Cached
	if cached == 0 {
		cached = p.Input
	}
	micro := float64(u.Input+u.CacheWrite)*p.Input + float64(u.Output)*p.Output + float64(u.CacheRead)*cached
	return micro / 1e6, true
}
