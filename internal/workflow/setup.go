package workflow

import (
	"context"
	"fmt"
	"io"
)

// MaxOutput bounds a setup step's standard output; more is an error.
const MaxOutput = 1 << 20

// RunSetup runs the setup steps in order (see the package doc) and
// returns each step's output by its `as` name. env gives the steps'
// environment variables' values (nil: the process's). A step's standard
// error is copied to stderr as it runs. The first step that fails, times
// out or writes too much stops the run: the error is an *Error at the
// step naming its exit status and the tail of its standard error.
func (f *File) RunSetup(ctx context.Context, env func(string) string, stderr io.Writer) (map[string]string, error) {
	return nil, fmt.Errorf("workflow: not implemented")
}
