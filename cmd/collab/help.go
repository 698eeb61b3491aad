package main

import (
	"embed"
	"fmt"

	"github.com/spf13/pflag"
)

// helpFiles are the commands' help texts: help/NAME.txt for a command,
// help/NAME-SUB.txt for a subcommand with a text of its own. The
// reference docs/commands.md is made from what they print
// (TestCommandReference).
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns the help text of name ("task", "inbox-ack"). A missing
// file is this program's bug: it panics (TestHelpFiles finds it first).
func helpText(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(fmt.Sprintf("collab: no help text for %q: %v", name, err))
	}
	return string(b)
}

// setUsage makes fs's --help print text, then the flags.
func setUsage(fs *pflag.FlagSet, text string) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), text)
		fs.PrintDefaults()
	}
}
