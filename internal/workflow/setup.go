package workflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/collabdev/collab/internal/plumbing/proc"
)

// MaxOutput bounds a setup step's standard output; more is an error.
const MaxOutput = 1 << 20

// RunSetup runs the setup steps in order (see the package doc) and
// returns each step's output by its `as` name. env is the steps' whole
// environment as NAME=VALUE strings (nil: the process's; a slice rather
// than a lookup function because a shell's environment has to be listed).
// Each line a step writes to standard error is copied to stderr (nil:
// dropped) as it runs, prefixed "setup N: ". The first step that fails,
// times out or writes more than MaxOutput stops the run: the error is an
// *Error at the step, naming its exit status and the tail of its standard
// error, and wraps the *proc.ExitError when there is one.
func (f *File) RunSetup(ctx context.Context, env []string, stderr io.Writer) (map[string]string, error) {
	out := make(map[string]string, len(f.Setup))
	for i, st := range f.Setup {
		spec := proc.Spec{
			Argv:      []string{"sh", "-c", st.Shell},
			Env:       env,
			Dir:       f.Dir,
			Timeout:   st.Timeout,
			MaxStdout: MaxOutput,
		}
		if spec.Timeout <= 0 {
			spec.Timeout = DefaultStepTimeout
		}
		if stderr != nil {
			prefix := fmt.Sprintf("setup %d: ", i+1)
			spec.StderrLine = func(line []byte) {
				fmt.Fprintf(stderr, "%s%s\n", prefix, line)
			}
		}
		res, err := proc.Run(ctx, spec)
		if err != nil {
			return nil, &Error{Pos: st.Pos, Msg: "setup step failed: " + describe(st, res, err), Err: err}
		}
		if res.Truncated {
			return nil, &Error{Pos: st.Pos, Msg: fmt.Sprintf("setup step wrote more than %d bytes to standard output", MaxOutput)}
		}
		if st.As != "" {
			out[st.As] = strings.TrimSuffix(string(res.Stdout), "\n")
		}
	}
	return out, nil
}

// describe says why a step failed: its status and the tail of its
// standard error.
func describe(st Step, res proc.Result, err error) string {
	var ee *proc.ExitError
	if !errors.As(err, &ee) {
		return err.Error()
	}
	var b strings.Builder
	switch {
	case ee.TimedOut:
		fmt.Fprintf(&b, "timed out after %s", st.Timeout)
	case ee.Cause != nil:
		fmt.Fprintf(&b, "stopped (%v)", ee.Cause)
	case ee.Signal != 0:
		fmt.Fprintf(&b, "killed by signal %d", int(ee.Signal))
	default:
		fmt.Fprintf(&b, "exit status %d", ee.Code)
	}
	if tail := strings.TrimSpace(strings.ToValidUTF8(string(res.StderrTail), "\uFFFD")); tail != "" {
		lines := strings.Split(tail, "\n")
		if len(lines) > 5 {
			lines = lines[len(lines)-5:]
		}
		b.WriteString("; its standard error ends:\n")
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
