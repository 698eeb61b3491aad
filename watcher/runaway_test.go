package watcher_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/watcher"
)

// TestRunawayLoops: agents whose CLIs always @mention the next one (a
// pair that mention each other, a triangle A→B→C→A) stop with the
// default guards: no reply goes deeper than DefaultMaxHops, a guard posts
// a notice, the replies are bounded, and the channel goes quiet.
func TestRunawayLoops(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		agents []string
		bound  int // most replies there can be
	}{
		// Each reply is to the one it answers, which it also mentions:
		// one reply a hop.
		{"pair", []string{"ping", "pong"}, watcher.DefaultMaxHops},
		// Each reply wakes two agents (its addressee and the one it
		// mentions): at most 2^0 + … + 2^(hops-1).
		{"triangle", []string{"tri-a", "tri-b", "tri-c"}, 1<<watcher.DefaultMaxHops - 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				root := tree.Root(t.TempDir())
				for i, a := range tt.agents {
					next := tt.agents[(i+1)%len(tt.agents)]
					r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
						return modelcli.Response{Text: fmt.Sprintf("@%s over to you (on %s)", next, c.msgID())}, nil
					}}
					cfg := config(root, r)
					cfg.Agent = a
					cfg.Poll, cfg.Heartbeat = watcher.DefaultPoll, watcher.DefaultHeartbeat
					// The guards' defaults, as collab watch has them.
					cfg.MaxHops, cfg.Rate, cfg.PairRate = 0, 0, 0
					start(t, cfg)
				}
				send(t, root, tt.agents[0], "@"+tt.agents[0]+" start the loop")

				// Wait until no message comes for two minutes (past the
				// rate guards' window).
				for last := -1; ; {
					n := len(messages(t, root))
					if n == last {
						break
					}
					last = n
					time.Sleep(2 * time.Minute)
				}

				msgs := messages(t, root)
				replies, guardNotices := 0, 0
				var dump strings.Builder
				for _, m := range msgs {
					fmt.Fprintf(&dump, "  %s %s→%s hops %d: %s\n", m.ID, m.From, m.To, m.Metadata.Hops, m.Content.Text)
					switch {
					case m.Type == "notice":
						// A notice answers the message it refuses, one hop
						// deeper, and is never answered.
						guardNotices++
						if m.To != channel.Broadcast || string(m.Metadata.Extra["guard"]) == "" {
							t.Errorf("notice %s to %q, guard %s; want to all, naming its guard", m.ID, m.To, m.Metadata.Extra["guard"])
						}
					case m.IsDeliveryReport():
						// A delivery report to the sender of a refused
						// (or undeliverable) message: not a reply, never
						// answered.
					case m.From != "alice":
						replies++
						if m.Metadata.Hops > watcher.DefaultMaxHops {
							t.Errorf("reply %s from %s at hop %d, over the limit %d", m.ID, m.From, m.Metadata.Hops, watcher.DefaultMaxHops)
						}
					}
				}
				if guardNotices == 0 || replies == 0 || replies > tt.bound {
					t.Errorf("%d replies (want 1 to %d) and %d guard notices (want some); messages:\n%s", replies, tt.bound, guardNotices, dump.String())
				}
				t.Logf("%d replies, %d guard notices", replies, guardNotices)
			})
		})
	}
}
