package watcher

import (
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/agent/watchconf"
)

// The defaults of [Config]: a zero field takes these. cmd/collab's flags
// show and use the same constants, so there is one copy of each.
const (
	DefaultTimeout         = 10 * time.Minute // Config.Timeout: one CLI run
	DefaultQuestionTimeout = 10 * time.Minute // Config.QuestionTimeout
	DefaultPoll            = time.Second      // Config.Poll
	DefaultHeartbeat       = 10 * time.Second // Config.Heartbeat
	DefaultGrace           = runenv.Grace     // Config.Grace: shutdown
	DefaultClaimGrace      = claim.DefaultGrace
	DefaultSessionTTL      = 8 * time.Hour // Config.SessionTTL
	DefaultRecoveryWindow  = 6 * time.Hour // Config.RecoveryWindow
	DefaultContext         = 10            // Config.Context: messages of transcript
	DefaultMaxHops         = 6             // Config.MaxHops
	DefaultRate            = 20            // Config.Rate: CLI runs per minute
	DefaultPairRate        = 6             // Config.PairRate: replies per minute to one sender
	DefaultSessionScope    = ScopeChannel  // Config.SessionScope
)

// The least a [Config] (and collab watch's flags) accepts: a shorter poll
// burns a core scanning, a shorter heartbeat rewrites presence nonstop.
const (
	MinPoll      = watchconf.MinPoll      // Config.Poll
	MinHeartbeat = watchconf.MinHeartbeat // Config.Heartbeat
)

// minHeartbeat is what check enforces: MinHeartbeat, lowered by the
// package's own tests, whose watchers beat fast.
var minHeartbeat = MinHeartbeat
