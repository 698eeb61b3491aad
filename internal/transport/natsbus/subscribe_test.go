package natsbus_test

import (
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/watcher"
)

// A Waker is a watcher's wake source.
var _ watcher.Waker = natsbus.Waker{}
