package watcher

import (
	"time"

	"github.com/collabdev/collab/channel"
)

// The package's tests beat fast: 50 ms heartbeats keep them short.
func init() { minHeartbeat = 10 * time.Millisecond }

// SetWriteMessage makes the watcher of cfg write its messages with f
// instead of a channel.Writer, so tests can inject write errors.
func SetWriteMessage(cfg *Config, f func(*channel.Message) error) { cfg.writeMessage = f }
