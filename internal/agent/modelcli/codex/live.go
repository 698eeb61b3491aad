package codex

// LiveCommand returns the command line and the whole environment of a
// live session (internal/agent/live): codex app-server, which takes turns
// as JSON-RPC requests on standard input, with Run's configuration (no
// background calls, Adapter.MCPServers, Adapter.Args, which must then be
// options app-server also takes: -c key=value is); env is added to the
// environment as Request.Env is. The model, the sandbox and the approval
// policy are the thread's, set through the protocol (LiveModel,
// LiveSandbox).
func (a *Adapter) LiveCommand(env []string) (argv, environ []string, err error) {
	bin := a.Bin
	if bin == "" {
		bin = "codex"
	}
	argv = []string{bin, "app-server", "-c", "analytics.enabled=false", "--disable", "plugins"}
	mcp, err := a.mcpArgs()
	if err != nil {
		return nil, nil, err
	}
	argv = append(argv, mcp...)
	return append(argv, a.Args...), a.env(env), nil
}

// LiveSandbox is the sandbox of a live session's thread: Adapter.Sandbox,
// or DefaultSandbox.
func (a *Adapter) LiveSandbox() string {
	if a.Sandbox == "" {
		return DefaultSandbox
	}
	return a.Sandbox
}

// LiveModel is the model a live session with extra variables env runs,
// as Run's Usage.Model says it: Adapter.Model, else config.toml's.
func (a *Adapter) LiveModel(env []string) string { return a.model(env) }

// MaxText is the longest reply kept: MaxOutput, or proc.DefaultMaxStdout.
func (a *Adapter) MaxText() int { return a.maxOutput() }
