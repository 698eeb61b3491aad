package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"collab/channel"
	"collab/internal/plumbing/tree"
)

func runArchive(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("archive", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab archive --channel C --older-than DURATION

Move the channel's messages named more than DURATION ago, unchanged, into
channels/C/archive/YYYY-MM/. Watchers and read no longer see them;
read --archive does. Archive only what every watcher has long seen.

Flags:
`)
		fs.PrintDefaults()
	}
	var ch string
	fs.StringVar(&ch, "channel", "", "channel (env COLLAB_CHANNEL, then COLLAB_SESSION)")
	older := fs.Duration("older-than", 0, "archive messages older than this (e.g. 720h)")
	rootf := rootFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("archive: unexpected argument %q", fs.Arg(0))
	}
	if ch == "" {
		ch = cmp.Or(getenv("COLLAB_CHANNEL"), getenv("COLLAB_SESSION"))
	}
	if err := tree.CheckName("channel", ch); err != nil {
		return usageErrorf("archive: %v", err)
	}
	if *older < time.Hour {
		return usageErrorf("archive: --older-than must be at least 1h (watchers may not have seen newer messages)")
	}
	n, err := channel.Archive(tree.Resolve(*rootf, getenv), ch, time.Now().Add(-*older))
	fmt.Fprintf(stdout, "archived %d messages of %s\n", n, ch)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}
