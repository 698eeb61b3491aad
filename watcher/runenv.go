package watcher

import "strconv"

// EnvHops is the variable of a model run's environment (SPEC §7) that holds
// the hops of the message being answered.
const EnvHops = "COLLAB_HOPS"

// RunHops returns the hops of the message a watcher's model run answers,
// from $COLLAB_HOPS as getenv reads it, or -1 outside a run (unset, or not
// a number ≥ 0). A message sent from inside the run is one hop deeper,
// RunHops(getenv)+1, which is 0 outside a run: so a chain of agents asking
// agents stays bounded by the watchers' MaxHops however they post (collab
// send, the MCP server).
func RunHops(getenv func(string) string) int {
	h, err := strconv.Atoi(getenv(EnvHops))
	if err != nil || h < 0 {
		return -1
	}
	return h
}
