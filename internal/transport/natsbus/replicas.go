package natsbus

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/internal/errkind"
)

// MaxReplicas is JetStream's limit on a stream's replicas.
const MaxReplicas = 5

var (
	// ErrReplicas is wrapped by InitStream's error when the replica count
	// is out of range.
	ErrReplicas = errors.New("natsbus: replicas must be from 1 to 5")
	// ErrNotClustered is wrapped by InitStream's error when more than one
	// replica is asked of a server that is not in a cluster.
	ErrNotClustered = errors.New("natsbus: more than one replica needs a JetStream cluster")
)

// JetStream API error codes InitStream explains.
const (
	codeInsufficientResources jetstream.ErrorCode = 10023 // not enough servers up for the replicas
	codeReplicasNotSupported  jetstream.ErrorCode = 10074 // replicas > 1 on a single server
)

// CheckReplicas checks a replica count of StreamConfig: 0 (a new stream
// gets 1, an existing one keeps its own) or 1 to MaxReplicas. An odd count
// is best: a RAFT group of 2 or 4 survives no more lost nodes than one of
// 1 or 3.
func CheckReplicas(n int) error {
	if n < 0 || n > MaxReplicas {
		return errkind.Wrap(errkind.Invalid, fmt.Errorf("%w, not %d", ErrReplicas, n))
	}
	return nil
}

// checkClustered refuses more than one replica on a server that is not in
// a cluster, before asking it (it would refuse too, less clearly).
func (b *Bus) checkClustered(replicas int) error {
	if replicas > 1 && b.nc.ConnectedClusterName() == "" {
		return errkind.Wrap(errkind.Conflict, fmt.Errorf("%w: the server at %s is a single server, not in a cluster: use --replicas 1, or run a cluster (deploy/nats/cluster)",
			ErrNotClustered, b.nc.ConnectedUrlRedacted()))
	}
	return nil
}

// replicasError explains the server's refusals of a replica count.
func replicasError(replicas int, err error) error {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return err
	}
	switch api.ErrorCode {
	case codeReplicasNotSupported:
		return errkind.Wrap(errkind.Conflict, fmt.Errorf("%w: the server is not clustered: %w", ErrNotClustered, err))
	case codeInsufficientResources:
		return fmt.Errorf("%d replicas need %d JetStream servers of the cluster up, with room: %w", replicas, replicas, err)
	}
	return err
}

// StreamStatus is where the stream's copies are.
type StreamStatus struct {
	Replicas int      `json:"replicas"`          // configured
	Cluster  string   `json:"cluster,omitempty"` // empty on a single server
	Leader   string   `json:"leader,omitempty"`  // the leader's server name; empty while electing
	Current  []string `json:"current,omitempty"` // followers up to date with the leader
	Behind   []string `json:"behind,omitempty"`  // followers catching up or offline
}

// StreamStatus reports the stream's replicas, leader and followers, as the
// server that answers sees them.
func (b *Bus) StreamStatus(ctx context.Context) (StreamStatus, error) {
	s, err := b.js.Stream(ctx, StreamName)
	if err != nil {
		return StreamStatus{}, streamError("stream "+StreamName, err)
	}
	info := s.CachedInfo()
	st := StreamStatus{Replicas: info.Config.Replicas}
	if ci := info.Cluster; ci != nil {
		st.Cluster, st.Leader = ci.Name, ci.Leader
		for _, p := range ci.Replicas {
			if p.Current && !p.Offline {
				st.Current = append(st.Current, p.Name)
			} else {
				st.Behind = append(st.Behind, p.Name)
			}
		}
	}
	return st, nil
}

// Text is the status in a line: the replica count, then on a cluster the
// leader and the followers.
func (s StreamStatus) Text() string {
	if s.Cluster == "" {
		return fmt.Sprintf("replicas %d (single server)\n", s.Replicas)
	}
	leader := s.Leader
	if leader == "" {
		leader = "none yet (electing)"
	}
	line := fmt.Sprintf("replicas %d on cluster %s: leader %s, followers current %d", s.Replicas, s.Cluster, leader, len(s.Current))
	if len(s.Current) > 0 {
		line += " (" + strings.Join(s.Current, " ") + ")"
	}
	if len(s.Behind) > 0 {
		line += ", catching up or offline: " + strings.Join(s.Behind, " ")
	}
	return line + "\n"
}

// InitReport is what [Bus.Init] did: collab nats init's output.
type InitReport struct {
	Stream  string       `json:"stream"`
	Created bool         `json:"created"` // else updated
	Status  StreamStatus `json:"status"`
}

// Init is InitStream followed by StreamStatus.
func (b *Bus) Init(ctx context.Context, c StreamConfig) (InitReport, error) {
	created, err := b.InitStream(ctx, c)
	if err != nil {
		return InitReport{}, err
	}
	st, err := b.StreamStatus(ctx)
	if err != nil {
		return InitReport{}, err
	}
	return InitReport{Stream: StreamName, Created: created, Status: st}, nil
}

// Text is the report in lines.
func (r InitReport) Text() string {
	verb := "updated"
	if r.Created {
		verb = "created"
	}
	return fmt.Sprintf("%s stream %s on %s> (direct get allowed: remote hosts read it without consumers)\n%s",
		verb, r.Stream, ChatPrefix, r.Status.Text())
}
