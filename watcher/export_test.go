package watcher

import "collab/channel"

// SetWriteMessage makes the watcher of cfg write its messages with f
// instead of a channel.Writer, so tests can inject write errors.
func SetWriteMessage(cfg *Config, f func(*channel.Message) error) { cfg.writeMessage = f }
