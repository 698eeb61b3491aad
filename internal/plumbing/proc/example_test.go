package proc_test

import (
	"context"
	"fmt"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
)

// No shell sees the input: it reaches the program byte for byte.
func ExampleRun() {
	res, err := proc.Run(context.Background(), proc.Spec{
		Argv:    []string{"tr", "a-z", "A-Z"},
		Stdin:   []byte("hello, $(whoami); `id`\n"),
		Timeout: 10 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(res.Stdout))
	// Output: HELLO, $(WHOAMI); `ID`
}

// The error names the program and quotes the last line of its stderr.
func ExampleExitError() {
	res, err := proc.Run(context.Background(), proc.Spec{
		Argv: []string{"sh", "-c", "echo partial; echo 'warming up' >&2; echo 'no API key' >&2; exit 3"},
	})
	fmt.Println(err)
	fmt.Print(string(res.Stdout))
	// Output:
	// sh: exit status 3: no API key
	// partial
}
