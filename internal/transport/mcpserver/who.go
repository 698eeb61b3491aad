package mcpserver

import (
	"context"
	"time"

	"github.com/collabdev/collab/internal/service"
)

// WhoArgs are who's arguments: none.
type WhoArgs struct{}

// Agent is one agent's presence as who returns it.
type Agent struct {
	Agent      string  `json:"agent"`
	State      string  `json:"state"` // AWAKE/IDLE, AWAKE/WORKING, …, STALE, OFFLINE
	AgeSeconds float64 `json:"age_seconds"`
	Host       string  `json:"host,omitempty"`
	Channel    string  `json:"channel,omitempty"`
	Working    string  `json:"working_on,omitempty"` // message id while WORKING
}

// WhoResult is what who returns.
type WhoResult struct {
	Agents []Agent `json:"agents"`
}

func addWhoTool(s *Server) error {
	addTool(s, "who", "Show which agents are awake, working, stale or offline.", s.who)
	return nil
}

// who shows the agents with a heartbeat (a registered agent without one
// is left out), each by its id.
func (s *Server) who(ctx context.Context, _ WhoArgs) (WhoResult, error) {
	rows, err := s.svc.Who(ctx, service.WhoRequest{})
	if err != nil {
		return WhoResult{}, err
	}
	out := WhoResult{Agents: make([]Agent, 0, len(rows))}
	for _, r := range rows {
		if r.Status == nil {
			continue
		}
		out.Agents = append(out.Agents, Agent{Agent: r.Agent, State: r.State, AgeSeconds: r.Age.Round(time.Second).Seconds(),
			Host: r.Status.Host, Channel: r.Status.Channel, Working: r.Status.MessageID})
	}
	return out, nil
}
