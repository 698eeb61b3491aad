package codex

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// configModel is a top-level `model = "NAME"` line of Codex's config.toml.
var configModel = regexp.MustCompile(`^model\s*=\s*"([^"\\]+)"\s*(#.*)?$`)

// model returns the model a run with extra variables env uses, as far as
// the Adapter can tell: Adapter.Model, else the top-level model of
// config.toml in the CLI's CODEX_HOME (default $HOME/.codex); "" if
// neither says.
func (a *Adapter) model(env []string) string {
	if a.Model != "" {
		return a.Model
	}
	vars := map[string]string{}
	for _, kv := range a.env(env) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	home := vars["CODEX_HOME"]
	if home == "" && vars["HOME"] != "" {
		home = filepath.Join(vars["HOME"], ".codex")
	}
	if home == "" {
		return ""
	}
	return readConfigModel(filepath.Join(home, "config.toml"))
}

// readConfigModel returns the model a config.toml sets before its first
// table, or "".
func readConfigModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			return "" // a table: top-level keys are over
		}
		if m := configModel.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}
