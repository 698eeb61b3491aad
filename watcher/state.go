package watcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"collab/channel"
	"collab/safedir"
	"collab/tree"
)

const stateFile = "watch.json"

// state is what a watcher keeps in ROOT/state/AGENT/watch.json so that a
// restart answers what arrived while it was down, each message once.
type state struct {
	Version  int                       `json:"version"`
	Saved    time.Time                 `json:"saved"`
	Channels map[string]channel.Cursor `json:"channels"`
	// Pending are messages for the agent not yet handled, oldest first.
	Pending []ref `json:"pending"`
	// Noticed are threads that already got a guard notice.
	Noticed map[string]time.Time `json:"noticed,omitempty"`
	// Budget is what the CLI runs cost today.
	Budget budget `json:"budget,omitzero"`
	// Awaiting are jobs that asked a question, by session key.
	Awaiting map[string]question `json:"awaiting,omitempty"`
}

// question is a job waiting for its asker's answer.
type question struct {
	Job   string `json:"job"`
	Asker string `json:"asker"`
}

// budget is the spending of one UTC day.
type budget struct {
	Day     string  `json:"day"` // YYYY-MM-DD, UTC
	Spent   float64 `json:"spent_usd"`
	Noticed bool    `json:"noticed,omitempty"` // the day's notice is posted
}

type ref struct {
	Channel string `json:"channel"`
	ID      string `json:"id"`
}

// loadState reads the agent's state. A missing file is (nil, nil); a
// corrupt one is an error that says so.
func loadState(root tree.Root, agent string) (*state, error) {
	d, err := safedir.Open(root.State(agent))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	defer d.Close()
	data, _, err := d.ReadFile(stateFile, 64<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("corrupt state %s/%s: %w", d.Path(), stateFile, err)
	}
	if s.Version != 1 {
		return nil, fmt.Errorf("state %s/%s: unknown version %d", d.Path(), stateFile, s.Version)
	}
	return &s, nil
}

func saveState(root tree.Root, agent string, s *state) error {
	s.Version = 1
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	d, err := safedir.Create(root.State(agent))
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	defer d.Close()
	if err := d.Replace(stateFile, data, 0o666); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}
