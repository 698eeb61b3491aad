package mcpserver

import (
	"context"
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
	all, err := s.store.who(ctx)
	if err != nil {
		return WhoResult{}, err
	}
	return WhoResult{Agents: all}, nil
}
