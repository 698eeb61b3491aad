package main

// The conventions every subcommand follows, in one place:
//
//   - Precedence is flag, then environment variable, then default. A flag
//     bound with envflag.FromEnv names its variables in its help, and parse fills
//     it from the first one set when the flag is not on the command line.
//     Defaults are the packages' exported constants.
//   - Identity: --agent, then $COLLAB_AGENT, then, for a person at a shell,
//     the login name (actingAgent). The daemons that run for an agent
//     (watch, mcp) take no login name: they must be told whom they serve.
//   - Text: --text, the trailing words, or standard input when either is
//     "-" (readText).
//   - Shared flags (--root, --keyring, --key, --remote, NATS) are added
//     as one bundle, common (service.go), which also opens the service.
//   - Subcommands: one dispatch, subcommands (main.go).
//   - Output: JSON with --json (show, showLine), tables by printTable.
//   - Exit codes: the exit* constants of main.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// The environment variables that more than one command reads.
const (
	envRoot    = "COLLAB_ROOT"
	envAgent   = "COLLAB_AGENT"
	envChannel = "COLLAB_CHANNEL"
	envSession = "COLLAB_SESSION" // the seed's name for the channel
)

// annotRequired marks a flag parse refuses missing (needChannel).
const annotRequired = "collab-required"

// newFlags returns a command's flag set. Parse errors are usage errors.
func newFlags(name string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("collab "+name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	return fs
}

// cmdFlags is newFlags whose --help prints usage, then the flags.
func cmdFlags(name, usage string, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags(name, stderr)
	setUsage(fs, usage)
	return fs
}

// parse parses args (envflag.Parse: a flag not given takes its
// variable), then checks --root and a needed --channel. A bad flag or
// variable is a usage error, --help is pflag.ErrHelp.
func parse(fs *pflag.FlagSet, args []string, getenv env) error {
	var ue *envflag.UsageError
	if err := envflag.Parse(fs, args, getenv); errors.As(err, &ue) {
		return usageErrorf("%s", ue.Msg)
	} else if err != nil {
		return err
	}
	if err := checkRoot(fs, getenv); err != nil {
		return err
	}
	if f := fs.Lookup("channel"); f != nil && f.Annotations[annotRequired] != nil {
		return checkChannel(cmdName(fs), f.Value.String())
	}
	return nil
}

// parseNone is parse for a command that takes no arguments.
func parseNone(fs *pflag.FlagSet, args []string, getenv env) error {
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("%s: unexpected argument %q", cmdName(fs), fs.Arg(0))
	}
	return nil
}

// parseOne is parse for a command that takes one argument; want says
// what it is when it is missing ("give one job id").
func parseOne(fs *pflag.FlagSet, args []string, getenv env, want string) error {
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("%s: %s", cmdName(fs), want)
	}
	return nil
}

// cmdErr is err with the command's context, nil for nil.
func cmdErr(cmd string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// cmdName is the command of fs as errors name it ("jobs show").
func cmdName(fs *pflag.FlagSet) string { return strings.TrimPrefix(fs.Name(), "collab ") }

// checkRoot refuses a --root that is not a collab tree, for every command
// that has the flag but init, the one command that makes a tree: on a host
// where the shared folder is not mounted, nothing may land on the local
// disk under the mount point.
func checkRoot(fs *pflag.FlagSet, getenv env) error {
	f := fs.Lookup("root")
	if f == nil || fs.Name() == "collab init" || remoteOn(fs) {
		return nil // --remote: no tree is touched
	}
	return tree.Resolve(f.Value.String(), getenv).Check()
}

// channelFlag adds --channel (-s, also --session), from $COLLAB_CHANNEL
// then $COLLAB_SESSION.
func channelFlag(fs *pflag.FlagSet, usage string) *string {
	p := fs.StringP("channel", "s", "", usage)
	envflag.Alias(fs, "session", "channel")
	envflag.FromEnv(fs, "channel", envChannel, envSession)
	return p
}

// needChannel is channelFlag for a command that needs one: parse checks
// it (checkChannel).
func needChannel(fs *pflag.FlagSet, usage string) *string {
	p := channelFlag(fs, usage)
	if err := fs.SetAnnotation("channel", annotRequired, []string{"true"}); err != nil {
		panic(err) // the flag was just added
	}
	return p
}

// checkChannel reports a missing or invalid channel as a usage error.
func checkChannel(cmd, ch string) error {
	if ch == "" {
		return usageErrorf("%s: no channel: use --channel or set %s", cmd, envChannel)
	}
	if err := tree.CheckName("channel", ch); err != nil {
		return usageErrorf("%s: %v", cmd, err)
	}
	return nil
}

// agentFlag adds --agent (and its aliases), from $COLLAB_AGENT; login says
// whether the command then takes the login name (see actingAgent).
func agentFlag(fs *pflag.FlagSet, short, usage string, login bool, aliases ...string) *string {
	p := fs.StringP("agent", short, "", usage)
	for _, a := range aliases {
		envflag.Alias(fs, a, "agent")
	}
	envflag.FromEnv(fs, "agent", envAgent)
	if login {
		f := fs.Lookup("agent")
		f.Usage = strings.TrimSuffix(f.Usage, ")") + ", then the login name)"
	}
	return p
}

// actingAgent returns the agent a command acts as: agent (--agent, or
// $COLLAB_AGENT as parse filled it), else for a person at a shell the login
// name. A missing or invalid name is a usage error; noun is what the agent
// is to the command ("sender", "agent").
func actingAgent(ctx context.Context, cmd, noun, agent string) (string, error) {
	login := false
	if agent == "" {
		agent, login = loginName(ctx), true
	}
	if agent == "" {
		return "", usageErrorf("%s: no %s: use --agent or set %s", cmd, noun, envAgent)
	}
	if err := tree.CheckName("agent", agent); err != nil {
		if login {
			return "", usageErrorf("%s: %v (your login name); use --agent or set %s", cmd, err, envAgent)
		}
		return "", usageErrorf("%s: %v", cmd, err)
	}
	return agent, nil
}

// namedAgent checks the agent of a daemon that serves one (watch, mcp):
// given by --agent or $COLLAB_AGENT, never the login name.
func namedAgent(cmd, agent string) error {
	if err := tree.CheckName("agent", agent); err != nil {
		return usageErrorf("%s: %v (use --agent or set %s; it names the agent served, never taken from the login name)", cmd, err, envAgent)
	}
	return nil
}

type loginKey struct{}

// withLogin gives the commands run with ctx a way to learn the login name
// (main: osLogin; tests: a fixed name or none).
func withLogin(ctx context.Context, login func() string) context.Context {
	return context.WithValue(ctx, loginKey{}, login)
}

// loginName returns the login name, or "" when ctx carries no way to learn
// it or it is unknown.
func loginName(ctx context.Context) string {
	if f, _ := ctx.Value(loginKey{}).(func() string); f != nil {
		return f()
	}
	return ""
}

// osLogin returns the name of the user running collab, "" if unknown.
func osLogin() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return u.Username
}

// Where readText found the text.
type textFrom int

const (
	textNone  textFrom = iota // neither --text nor words
	textArgs                  // --text or the words
	textStdin                 // standard input, asked for with "-"
)

// readText returns a command's text: --text (textSet, text) or the words
// joined by spaces, read from standard input when that is "-", at most
// limit bytes (what names the limit: "message", "document"). Both --text
// and words is a usage error.
func readText(cmd string, textSet bool, text string, words []string, stdin io.Reader, limit int, what string) (string, textFrom, error) {
	switch {
	case textSet && len(words) > 0:
		return "", textNone, usageErrorf("%s: give the text either with --text or as words, not both", cmd)
	case textSet:
	case len(words) > 0:
		text = strings.Join(words, " ")
	default:
		return "", textNone, nil
	}
	if text != "-" {
		return text, textArgs, nil
	}
	s, err := readStdin(cmd, stdin, limit, what)
	return s, textStdin, err
}

// readStdin reads standard input, at most limit bytes.
func readStdin(cmd string, stdin io.Reader, limit int, what string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(stdin, int64(limit)+1))
	if err != nil {
		return "", fmt.Errorf("%s: read standard input: %w", cmd, err)
	}
	if len(data) > limit {
		return "", usageErrorf("%s: standard input is larger than the %d-byte %s limit", cmd, limit, what)
	}
	return string(data), nil
}

// show prints v as JSON (writeJSON) with asJSON, else text.
func show(w io.Writer, asJSON bool, v any, text string) error {
	if asJSON {
		return writeJSON(w, v)
	}
	_, err := io.WriteString(w, text)
	return err
}

// showLine is show with v on one line (jsonLine).
func showLine(w io.Writer, asJSON bool, v any, text string) error {
	if asJSON {
		return jsonLine(w, v)
	}
	return show(w, false, nil, text)
}

// jsonLine prints v as one line of JSON.
func jsonLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// writeJSON prints v as indented JSON, HTML characters as they are.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printTable prints rows (the first the header) as a table of columns
// two spaces apart.
func printTable(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}
