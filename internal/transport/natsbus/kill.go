package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// KillPrefix is the subject prefix of job kill requests: collab jobs kill
// publishes to collab.jobs.kill.AGENT after it has written the kill file,
// so that the agent's watcher looks at the file at once instead of at its
// next poll. The file stays the truth: a request here is only a hint to
// look (its by and host are not believed), and whether the file's
// requester may kill the job is the watcher's to judge (jobs.MayKill).
const KillPrefix = "collab.jobs.kill."

// KillSubject returns the kill subject of an agent.
func KillSubject(agent string) string { return KillPrefix + agent }

// KillRequest is the payload of a kill request.
type KillRequest struct {
	Job  string `json:"job"`
	By   string `json:"by,omitempty"`
	Host string `json:"host,omitempty"`
}

// checkJob refuses what cannot be a job id ("job-" and a message id).
func checkJob(id string) error {
	rest, ok := strings.CutPrefix(id, "job-")
	if !ok || rest == "" || len(id) > 200 {
		return fmt.Errorf("%w: job id %q", tree.ErrBadName, id)
	}
	for i := 0; i < len(rest); i++ {
		if !tree.NameByte(rest[i]) {
			return fmt.Errorf("%w: job id %q", tree.ErrBadName, id)
		}
	}
	return nil
}

// PublishKill publishes a kill request for job of agent on core NATS and
// waits at most PublishTimeout for the server to have it. Failures are
// counted and logged as by PublishMessage.
func (b *Bus) PublishKill(ctx context.Context, agent string, r KillRequest) error {
	err := b.publishKill(ctx, agent, r)
	if err != nil {
		b.failed("nats kill publish failed", err, keyAgent, agent)
		return fmt.Errorf("natsbus: publish kill of %s: %w", r.Job, err)
	}
	return nil
}

func (b *Bus) publishKill(ctx context.Context, agent string, r KillRequest) error {
	if err := errors.Join(tree.CheckName("agent", agent), checkJob(r.Job)); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := b.nc.Publish(KillSubject(agent), data); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if err := b.nc.FlushWithContext(ctx); err != nil {
		return err
	}
	b.stats.published.Add(1)
	return nil
}

// SubscribeKills calls fn with the job id of each kill request published
// for agent from now on, until Stop. Invalid payloads are counted and
// logged. fn runs on nats.go's delivery goroutine and must not block.
func (b *Bus) SubscribeKills(agent string, fn func(job string)) (*Subscription, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return nil, err
	}
	sub, err := b.nc.Subscribe(KillSubject(agent), func(msg *nats.Msg) {
		var r KillRequest
		err := json.Unmarshal(msg.Data, &r)
		if err == nil {
			err = checkJob(r.Job)
		}
		if err != nil {
			b.stats.rejected.Add(1)
			if ok, n := b.asyncLog.allow(); ok {
				b.log.Warn("nats kill request rejected", keySubject, msg.Subject, keyErr, err, keySuppressed, n)
			}
			return
		}
		b.stats.received.Add(1)
		fn(r.Job)
	})
	if err != nil {
		return nil, fmt.Errorf("natsbus: subscribe kills of %s: %w", agent, err)
	}
	if b.nc.IsConnected() {
		if err := b.nc.FlushTimeout(b.timeout); err != nil {
			b.log.Debug("nats flush after subscribe failed", keyErr, err)
		}
	}
	return &Subscription{subs: []*nats.Subscription{sub}}, nil
}
