package mcpserver

import (
	"context"

	"github.com/collabdev/collab/internal/service"
	bridgedsvc "github.com/collabdev/collab/internal/service/bridged"
)

// defaultService is the Service of a server given none: through
// cfg.Remote when set, else on the mount at cfg.Root.
func defaultService(cfg Config) service.Service {
	if cfg.Remote != nil {
		return bridgedsvc.New(cfg.Remote)
	}
	return service.NewMount(MountConfig(cfg))
}

// MountConfig is the configuration of the service on the mount that a
// server for cfg calls: cfg's root, host, clock, logger, verifier and
// NATS. A door that also lets the tools start watchers (delegation) sets
// its Program.
func MountConfig(cfg Config) service.Config {
	sc := service.Config{Root: cfg.Root, Host: cfg.Host, Now: cfg.Now, Logger: cfg.Logger,
		Verifier: cfg.Verifier, Publish: cfg.Publish, NoFSWake: cfg.NoFSWake}
	if cfg.Wake != nil {
		sc.Wake = func(ctx context.Context, _ string) (<-chan string, func(), error) { return cfg.Wake(ctx) }
	}
	return sc
}
