package mcpserver

import (
	"context"
	"fmt"
	"time"

	"collab/internal/plumbing/proc"
	"collab/presence"
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

func (s *Server) who(ctx context.Context, _ WhoArgs) (WhoResult, error) {
	all, _, err := presence.ReadAll(s.cfg.Root)
	if err != nil {
		return WhoResult{}, fmt.Errorf("read presence: %w", err)
	}
	now := s.cfg.Now()
	res := WhoResult{Agents: []Agent{}}
	for _, st := range all {
		age, _ := st.Age(now)
		res.Agents = append(res.Agents, Agent{
			Agent:      st.AgentID,
			State:      st.Effective(now, 0, s.cfg.Host, proc.PIDAlive),
			AgeSeconds: age.Round(time.Second).Seconds(),
			Host:       st.Host,
			Channel:    st.Channel,
			Working:    st.MessageID,
		})
	}
	return res, nil
}
