package main

import (
	"context"
	"fmt"
	"io"

	"github.com/collabdev/collab/internal/service"
)

func runLs(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("ls", helpText("ls"), stderr)
	asJSON := fs.Bool("json", false, "print JSON lines")
	c := addCommon(fs, withRoot)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	list, err := c.mount(getenv, stderr).Instances(ctx)
	if err != nil {
		return fmt.Errorf("ls: %w", err)
	}
	if !*asJSON {
		_, err = io.WriteString(stdout, service.InstancesText(list))
		return err
	}
	for _, r := range list {
		if err := jsonLine(stdout, r); err != nil {
			return err
		}
	}
	return nil
}
