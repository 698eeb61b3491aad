package service

import (
	"context"

	"github.com/collabdev/collab/internal/transport/natsbus"
)

// KillJobNow is KillJob, then the kill told at once over bus to the job's
// watcher, so that it acts now rather than at its next poll (nil bus: by
// file only). A failure to tell is returned as told; the kill file stands.
func KillJobNow(ctx context.Context, svc Workspace, bus *natsbus.Bus, host string, a Actor, req KillRequest) (k Killed, told, err error) {
	if k, err = svc.KillJob(ctx, a, req); err != nil || bus == nil {
		return k, nil, err
	}
	return k, bus.PublishKill(ctx, k.Job.Agent, natsbus.KillRequest{Job: k.Job.ID, By: k.By, Host: host}), nil
}
