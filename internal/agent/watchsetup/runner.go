package watchsetup

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/agent/watchconf"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/watcher"
)

// runner is the CLI adapter of s, with its MCP servers (--mcp), once its
// program is found.
func runner(root tree.Root, s Settings, getenv func(string) string) (watcher.Runner, error) {
	cli := cmp.Or(s.CLI, watchconf.DefaultCLI)
	servers, err := mcpServers(s.MCP, cli, root, s.Agent, s.NATS, s.MCPArgs)
	if err != nil {
		return nil, err
	}
	r, err := newRunner(cli, s.Cmd, s.Model, s.CLIArgs, servers, getenv)
	if err != nil {
		return nil, err
	}
	if err := checkRunnable(runnerProgram(r), s.Workdir); err != nil {
		return nil, err
	}
	return r, nil
}

// mcpEnvVars are the variables `collab mcp` reads from its environment
// that a watcher's CLI must pass on to it: the channel and depth of the
// message being answered (set by the watcher for each run), the key and
// keyring, and NATS.
var mcpEnvVars = []string{
	runenv.Channel, runenv.Hops, runenv.Key, "COLLAB_KEYRING", "XDG_CONFIG_HOME",
	// delegate_to_worktree's limits and defaults, as collab delegate's.
	sessions.EnvDepth, runenv.MaxHops, runenv.BudgetUSD, runenv.BudgetTokens, "COLLAB_WORKTREES", "COLLAB_DELEGATE_CLI", "COLLAB_DELEGATE_CMD",
	"NATS_URL", "NATS_CREDS", "NATS_NKEY", "NATS_USER", "NATS_PASSWORD", "NATS_TOKEN", "NATS_CA", "NATS_CERT", "NATS_KEY",
}

// mcpServers returns the MCP server `collab watch --mcp` gives its model
// CLI: this same binary as `collab mcp --agent A --root ROOT` plus the
// watcher's NATS flags. The channel is not a flag: the watcher sets
// COLLAB_CHANNEL for each run to the channel of the message being
// answered, so a watcher of several channels gives each run the right one.
// extra are more arguments (watch --remote's: --remote and its NATS
// flags). It returns nil when on is false.
func mcpServers(on bool, cli string, root tree.Root, agent string, nats *natsbus.Options, extra []string) ([]modelcli.MCPServer, error) {
	if !on {
		return nil, nil
	}
	if !slices.Contains(watchconf.MCPCLIs, cli) {
		return nil, invalid("watch: --mcp needs --cli claude or codex, not %s", cli)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("watch: --mcp: %w", err)
	}
	abs, err := filepath.Abs(string(root)) // the CLI runs in --workdir
	if err != nil {
		return nil, fmt.Errorf("watch: --mcp: %w", err)
	}
	args := append([]string{"mcp", "--agent", agent, "--root", abs}, NATSArgs(nats)...)
	return []modelcli.MCPServer{{Name: "collab", Command: exe, Args: append(args, extra...), EnvVars: mcpEnvVars}}, nil
}

// NATSArgs returns the flags that give another collab command the
// connection settings of o (nil: none); the secrets go by variable.
func NATSArgs(o *natsbus.Options) []string {
	if o == nil {
		return nil
	}
	var args []string
	for _, f := range []struct{ flag, v string }{
		{"--nats", o.URL}, {"--nats-creds", o.CredsFile}, {"--nats-nkey", o.NKeySeedFile}, {"--nats-user", o.User},
		{"--nats-ca", o.TLSCA}, {"--nats-cert", o.TLSCert}, {"--nats-key", o.TLSKey},
	} {
		if f.v != "" {
			args = append(args, f.flag, f.v)
		}
	}
	return args
}

// newRunner builds the CLI adapter of settings that passed watchconf's
// check. For claude, codex and gemini, --cmd may name the program (and
// leading arguments) to run instead of the one on PATH. The claude and
// codex adapters give the CLI the mcp servers.
func newRunner(cli, cmdline, model string, extra []string, mcp []modelcli.MCPServer, getenv func(string) string) (watcher.Runner, error) {
	var argv []string
	if cmdline != "" {
		var err error
		if argv, err = modelcli.SplitCommand(cmdline, getenv); err != nil {
			return nil, invalid("watch: --cmd: %v", err)
		}
	}
	bin := func() string {
		if len(argv) > 0 {
			return argv[0]
		}
		return ""
	}
	args := func() []string {
		if len(argv) > 1 {
			return append(argv[1:len(argv):len(argv)], extra...)
		}
		return extra
	}
	switch cli {
	case "command":
		if len(argv) == 0 { // --cmd's words expanded to none
			return nil, invalid("watch: --cli command needs --cmd 'PROGRAM ARGS…'")
		}
		return &modelcli.Command{Argv: argv, Args: extra}, nil
	case "claude":
		return &claude.Adapter{Bin: bin(), Model: model, Args: args(), MCPServers: mcp}, nil
	case "codex":
		return &codex.Adapter{Bin: bin(), Model: model, Args: args(), MCPServers: mcp}, nil
	case "gemini":
		return &gemini.Adapter{Bin: bin(), Model: model, Args: args()}, nil
	default:
		return nil, fmt.Errorf("watch: no adapter for --cli %q", cli) // watchconf refuses it first
	}
}

// runnerProgram is the program the adapter runs: --cmd's first word, or
// the CLI's own name.
func runnerProgram(r watcher.Runner) string {
	switch r := r.(type) {
	case *modelcli.Command:
		return r.Argv[0]
	case *claude.Adapter:
		return cmp.Or(r.Bin, "claude")
	case *codex.Adapter:
		return cmp.Or(r.Bin, "codex")
	case *gemini.Adapter:
		return cmp.Or(r.Bin, "gemini")
	}
	return ""
}

// checkRunnable refuses, at start, a --workdir that is not a directory and
// a program that cannot be found, rather than failing every message. A
// relative program with a slash is looked for in the workdir, where it
// runs.
func checkRunnable(program, workdir string) error {
	if workdir != "" {
		fi, err := os.Stat(workdir)
		if err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			return invalid("watch: --workdir %s: %v", workdir, err)
		}
	}
	if program == "" {
		return nil
	}
	path := program
	if strings.Contains(path, "/") && !filepath.IsAbs(path) && workdir != "" {
		path = filepath.Join(workdir, path)
	}
	if _, err := exec.LookPath(path); err != nil {
		return invalid("watch: program %q (the CLI, or --cmd) cannot be run: %v", program, err)
	}
	return nil
}
