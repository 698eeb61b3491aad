// Package runenv is a model run's environment (docs/protocol.md#the-model-run): the variables a
// watcher gives each CLI run, and what a program inside the run (collab
// send, collab mcp, collab delegate) reads back. It is the one owner of
// their names and values, and of how long a run may finish once its
// watcher is told to stop.
//
// The environment has two parts: the watcher's ([Watcher]: the same for
// every run of one watcher, set by whoever starts it) and the message's
// ([Message]: the one being answered, set by the watcher for each run).
// The message's part comes last, so it wins.
package runenv

import (
	"strconv"
	"time"
)

// The variables of a run.
const (
	Root      = "COLLAB_ROOT"       // the tree
	Agent     = "COLLAB_AGENT"      // the agent answering
	Channel   = "COLLAB_CHANNEL"    // the message's channel
	MessageID = "COLLAB_MESSAGE_ID" // the message answered
	From      = "COLLAB_FROM"       // its sender
	Hops      = "COLLAB_HOPS"       // its hops (see [RunHops])

	MaxHops      = "COLLAB_MAX_HOPS"      // the watcher's --max-hops
	BudgetUSD    = "COLLAB_BUDGET_USD"    // the watcher's --budget-usd
	BudgetTokens = "COLLAB_BUDGET_TOKENS" // the watcher's --budget-tokens
	Key          = "COLLAB_KEY"           // the agent's signing key
	Remote       = "COLLAB_REMOTE"        // "1": through a bridge
	StateDir     = "COLLAB_STATE_DIR"     // a bridged host's state
)

// Grace is how long a running CLI may finish once its watcher is told to
// stop (collab watch --grace's default); past it the run is killed.
const Grace = 30 * time.Second

// RunHops returns the hops of the message a watcher's model run answers,
// from $COLLAB_HOPS as getenv reads it, or -1 outside a run (unset, or not
// a number ≥ 0). A message sent from inside the run is one hop deeper,
// RunHops(getenv)+1, which is 0 outside a run: so a chain of agents asking
// agents stays bounded by the watchers' MaxHops however they post (collab
// send, the MCP server).
func RunHops(getenv func(string) string) int {
	h, err := strconv.Atoi(getenv(Hops))
	if err != nil || h < 0 {
		return -1
	}
	return h
}

// Message is the part of a run's environment that the message answered
// sets.
type Message struct {
	Root, Agent string
	Channel, ID string
	From        string
	Hops        int
}

// Env returns m as KEY=VALUE settings.
func (m Message) Env() []string {
	return []string{
		Root + "=" + m.Root,
		Agent + "=" + m.Agent,
		Channel + "=" + m.Channel,
		MessageID + "=" + m.ID,
		From + "=" + m.From,
		Hops + "=" + strconv.Itoa(m.Hops),
	}
}

// Watcher is the part of a run's environment that its watcher sets, the
// same for every run: the limits a delegation made from the run carries
// over, the key the run signs with, where collab is, and the bridge of a
// host without the mount.
type Watcher struct {
	MaxHops      int     // always set
	BudgetUSD    float64 // set when > 0
	BudgetTokens int64   // set when > 0
	// Key is the run's own agent's key, or "": set either way, so a run
	// never inherits the key of whoever started the watcher.
	Key string
	// Path, when set, replaces PATH (collab's folder first).
	Path string
	// StateDir, when set, sends the run's collab commands through a
	// bridge with this state (COLLAB_REMOTE=1).
	StateDir string
}

// Env returns w as KEY=VALUE settings.
func (w Watcher) Env() []string {
	env := []string{MaxHops + "=" + strconv.Itoa(w.MaxHops)}
	if w.BudgetUSD > 0 {
		env = append(env, BudgetUSD+"="+strconv.FormatFloat(w.BudgetUSD, 'f', -1, 64))
	}
	if w.BudgetTokens > 0 {
		env = append(env, BudgetTokens+"="+strconv.FormatInt(w.BudgetTokens, 10))
	}
	env = append(env, Key+"="+w.Key)
	if w.Path != "" {
		env = append(env, "PATH="+w.Path)
	}
	if w.StateDir != "" {
		env = append(env, Remote+"=1", StateDir+"="+w.StateDir)
	}
	return env
}
