package main

import (
	"context"
	"errors"
	"slices"

	"github.com/collabdev/collab/internal/errkind"
)

// actorName returns the agent a workspace command acts for: on the mount
// --agent as given (NAME or NAME@INSTANCE; the service checks it); else,
// and through a bridge always (the name is the connection's), --agent or
// the login name, checked here.
func actorName(ctx context.Context, cmd string, remote bool, agent string) (string, error) {
	if agent != "" && !remote {
		return agent, nil
	}
	return actingAgent(ctx, cmd, "agent", agent)
}

// exitAs gives err, when it is of one of kinds, the exit code a command
// documents for it (exit 1 where its help promised 1 before the service
// layer had kinds), keeping its message. Other errors pass as they are.
func exitAs(code int, err error, kinds ...errkind.Kind) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) || !slices.Contains(kinds, errkind.Of(err)) {
		return err
	}
	return &exitError{code: code, msg: err.Error()}
}
