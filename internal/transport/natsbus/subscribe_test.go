package natsbus_test

import (
	"collab/internal/transport/natsbus"
	"collab/watcher"
)

// A Waker is a watcher's wake source.
var _ watcher.Waker = natsbus.Waker{}
