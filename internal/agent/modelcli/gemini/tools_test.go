package gemini

import (
	"slices"
	"testing"
)

func TestToolArgs(t *testing.T) {
	if got := ToolArgs(nil); got != nil {
		t.Errorf("ToolArgs(nil) = %q", got)
	}
	got := ToolArgs([]string{"read_file", "run_shell_command"})
	if want := []string{"--allowed-tools", "read_file", "run_shell_command"}; !slices.Equal(got, want) {
		t.Errorf("ToolArgs = %q, want %q", got, want)
	}
	// They come before the --prompt that ends the command line.
	argv := (&Adapter{Args: got}).argv("")
	if i := slices.Index(argv, "--allowed-tools"); i < 0 || argv[len(argv)-2] != "--prompt" || i > len(argv)-2 {
		t.Errorf("argv %q", argv)
	}
}
