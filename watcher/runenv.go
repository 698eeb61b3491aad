package watcher

import "github.com/collabdev/collab/internal/agent/runenv"

// EnvHops is the variable of a model run's environment that holds the
// hops of the message being answered: runenv.Hops, kept for callers
// that have not moved to package runenv.
const EnvHops = runenv.Hops

// RunHops is runenv.RunHops, kept for callers that have not moved to
// package runenv.
func RunHops(getenv func(string) string) int { return runenv.RunHops(getenv) }
