// Package bridged is the service.Service of a host without the mount: it
// works through a `collab bridge` over NATS (package remote's Client),
// with the same arguments, results and refusals as service.Mount. Writes
// are signed here with the actor's key and kept in the host's outbox until
// a bridge acknowledges them; the operations that need the mount
// (delegation, workflows) answer errkind.Unavailable.
package bridged

import (
	"errors"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/remote"
)

// Service is the service.Service through a bridge.
type Service struct {
	c *remote.Client
}

var _ service.Service = (*Service)(nil)

// New returns the Service that works through c; c's agent acts.
func New(c *remote.Client) *Service { return &Service{c: c} }

// kindOf gives an error of the bridge, or of the way to it, its kind: a
// refusal's is its wire code's (bridge.Error.Kind); a write kept in the
// outbox is Queued; no bridge answering, or no key to sign with, is
// Unavailable.
func kindOf(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errkind.Carried(err); ok {
		return err
	}
	switch {
	case errors.Is(err, remote.ErrQueued):
		return errkind.Wrap(errkind.Queued, err)
	case errors.Is(err, remote.ErrUnreachable), errors.Is(err, remote.ErrNoKey):
		return errkind.Wrap(errkind.Unavailable, err)
	}
	return errkind.Wrap(errkind.Of(err), err)
}
