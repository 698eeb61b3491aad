package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
)

// Names of the model CLIs, as their binaries are called.
const (
	ClaudeCode = "claude"
	CodexCLI   = "codex"
	GeminiCLI  = "gemini"
)

// Environment variables that say where the CLIs are and whether they must be.
const (
	// BinDirEnv names a folder holding claude, codex and gemini; it is
	// looked in before DefaultBinDir and PATH.
	BinDirEnv = "COLLAB_CLI_BIN_DIR"
	// RequireEnv, when "1", turns a missing CLI into a test failure
	// instead of a skip (CI sets it).
	RequireEnv = "COLLAB_TEST_REQUIRE_CLIS"
)

// DefaultBinDir is where the development machine has the CLIs (npm).
const DefaultBinDir = "/tmp/npmcli/node_modules/.bin"

// Models the CLIs are set to use. Any name works with the Server; these
// are names each CLI knows, so none of them warns or looks a model up.
const (
	ClaudeModel = "claude-sonnet-4-5"
	CodexModel  = "gpt-5.5"
	GeminiModel = "gemini-2.5-flash"
)

// FakeKey is the API key every CLI is given. The Server ignores keys and
// redacts them from recorded requests.
const FakeKey = "fakemodel-key"

// FindCLI returns the path of the named CLI: in $COLLAB_CLI_BIN_DIR, then
// DefaultBinDir, then PATH.
func FindCLI(name string) (string, error) {
	for _, dir := range []string{os.Getenv(BinDirEnv), DefaultBinDir} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("fakemodel: %s not in $%s, %s or PATH: %w", name, BinDirEnv, DefaultBinDir, err)
	}
	return p, nil
}

// RequireCLI returns the path of the named CLI ([FindCLI]), or skips the
// test without it, or fails it when $COLLAB_TEST_REQUIRE_CLIS is "1".
func RequireCLI(tb testing.TB, name string) string {
	tb.Helper()
	path, err := FindCLI(name)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("%s required (%s=1): %v", name, RequireEnv, err)
		}
		tb.Skipf("%v", err)
	}
	return path
}

// CLI is one model CLI set up to talk to a Server and nothing else: a
// fresh HOME holding its settings, an environment naming the server, and
// a working directory.
type CLI struct {
	Name  string // ClaudeCode, CodexCLI or GeminiCLI
	Path  string // the binary
	Home  string // the fresh HOME (settings, sessions, logs)
	Dir   string // a fresh, empty working directory: the project
	Model string // the model the settings name

	// Argv is the program and the arguments every run needs; callers
	// append their own (-p, exec, --output-format, the prompt). It is
	// [Path] today: everything else is in Env and the settings files.
	Argv []string
	// Env is the whole environment for a run: the test's own, less
	// anything that could reach a real service or another HOME, plus the
	// variables of the CLI (see the package documentation).
	Env []string
}

// CLI prepares the named CLI to run against s, in directories under
// tb.TempDir. It skips the test when the binary is not found, or fails it
// when $COLLAB_TEST_REQUIRE_CLIS is "1".
func (s *Server) CLI(tb testing.TB, name string) *CLI {
	tb.Helper()
	path := RequireCLI(tb, name)
	root := tb.TempDir()
	c, err := s.Setup(name, path, root)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Setup prepares the CLI at path to run against s, with its HOME and
// working directory under root (which must exist). [Server.CLI] is the
// usual way in tests.
func (s *Server) Setup(name, path, root string) (*CLI, error) {
	c := &CLI{Name: name, Path: path, Home: filepath.Join(root, "home"), Dir: filepath.Join(root, "work"), Argv: []string{path}}
	tmp := filepath.Join(c.Home, "tmp")
	for _, d := range []string{c.Home, c.Dir, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("setup %s: %w", name, err)
		}
	}
	env := append(cleanEnv(os.Environ()),
		"HOME="+c.Home,
		"TMPDIR="+tmp,
		"XDG_CONFIG_HOME="+filepath.Join(c.Home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(c.Home, ".cache"),
		"XDG_DATA_HOME="+filepath.Join(c.Home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(c.Home, ".local", "state"),
		"NO_PROXY=127.0.0.1,localhost",
		"no_proxy=127.0.0.1,localhost",
	)
	var err error
	switch name {
	case ClaudeCode:
		c.Model = ClaudeModel
		env = append(env,
			"ANTHROPIC_BASE_URL="+s.URL(),
			"ANTHROPIC_API_KEY="+FakeKey,
			"ANTHROPIC_MODEL="+c.Model,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", // no metrics, feature flags, error reports, update checks
			"CLAUDE_CODE_MAX_RETRIES=0",                  // an API error fails at once
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1",
		)
	case CodexCLI:
		c.Model = CodexModel
		codexHome := filepath.Join(c.Home, ".codex")
		env = append(env, "CODEX_HOME="+codexHome, "FAKEMODEL_API_KEY="+FakeKey)
		err = writeFile(filepath.Join(codexHome, "config.toml"), codexConfig(s.URL(), c.Model))
	case GeminiCLI:
		c.Model = GeminiModel
		env = append(env,
			"GEMINI_API_KEY="+FakeKey,
			"GOOGLE_GEMINI_BASE_URL="+s.URL(),
			"GEMINI_CLI_TRUST_WORKSPACE=true", // the settings turn folder trust off too
			"GEMINI_CLI_NO_RELAUNCH=true",     // no second node process
		)
		var b []byte
		b, err = json.MarshalIndent(geminiSettings(c.Model), "", "  ")
		if err == nil {
			err = writeFile(filepath.Join(c.Home, ".gemini", "settings.json"), string(b)+"\n")
		}
	default:
		return nil, fmt.Errorf("fakemodel: unknown CLI %q", name)
	}
	if err != nil {
		return nil, fmt.Errorf("setup %s: %w", name, err)
	}
	c.Env = env
	return c, nil
}

// codexConfig is $CODEX_HOME/config.toml: a provider at the server,
// without retries, analytics or plugins.
func codexConfig(url, model string) string {
	return fmt.Sprintf(`# Written by collab/internal/testsupport/fakemodel.
model = %q
model_provider = "fakemodel"

[model_providers.fakemodel]
name = "fakemodel"
base_url = "%s/v1"
env_key = "FAKEMODEL_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
`, model, url)
}

// geminiSettings is ~/.gemini/settings.json: API-key auth, no folder
// trust prompt, no usage statistics, telemetry or update checks, one
// attempt per request, and a fixed model (no routing call).
func geminiSettings(model string) map[string]any {
	return map[string]any{
		"security": map[string]any{
			"auth":        map[string]any{"selectedType": "gemini-api-key"},
			"folderTrust": map[string]any{"enabled": false},
		},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general": map[string]any{
			"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": 1,
		},
		"model": map[string]any{"name": model},
	}
}

// cleanEnv drops from env what could send a CLI elsewhere: keys, base
// URLs, homes and proxies of any model vendor, and the XDG folders.
func cleanEnv(env []string) []string {
	drop := []string{
		"ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "VERTEX", "CLOUDSDK_",
		"AWS_", "AZURE_", "XDG_", "HTTP_PROXY=", "HTTPS_PROXY=", "ALL_PROXY=", "NO_PROXY=",
		"HOME=", "TMPDIR=", "NODE_OPTIONS=",
	}
	var out []string
next:
	for _, kv := range env {
		upper := strings.ToUpper(kv)
		for _, p := range drop {
			if strings.HasPrefix(upper, p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

func writeFile(name, content string) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, []byte(content), 0o644)
}

// Run runs the CLI with args after Argv, in Dir, with standard input
// /dev/null, for at most timeout; the process group is killed when it
// ends. It returns the result even on error; the error is a
// *proc.ExitError when the CLI did not exit 0.
func (c *CLI) Run(ctx context.Context, timeout time.Duration, args ...string) (proc.Result, error) {
	return proc.Run(ctx, proc.Spec{
		Argv:       append(append([]string(nil), c.Argv...), args...),
		Env:        c.Env,
		Dir:        c.Dir,
		Timeout:    timeout,
		KillGrace:  2 * time.Second,
		StderrTail: 256 << 10,
	})
}
