package main

import (
	"context"
	"fmt"
	"io"

	"github.com/collabdev/collab/internal/errkind"
)

func runArchive(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("archive", helpText("archive"), stderr)
	ch := needChannel(fs, "channel")
	older := fs.Duration("older-than", 0, "archive messages older than this (e.g. 720h)")
	asJSON := fs.Bool("json", false, `print {"channel", "archived"}`)
	c := addCommon(fs, withRoot)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	return c.use(ctx, "", getenv, stderr, func(svc *openedService) error {
		n, err := svc.Archive(ctx, *ch, *older)
		if errkind.Is(err, errkind.Invalid) {
			return fmt.Errorf("archive: %w", err)
		}
		if *asJSON {
			if jerr := writeJSON(stdout, map[string]any{"channel": *ch, "archived": n}); jerr != nil && err == nil {
				err = jerr
			}
		} else {
			fmt.Fprintf(stdout, "archived %d messages of %s\n", n, *ch)
		}
		return cmdErr("archive", err)
	})
}
