package delivery

import (
	"testing"
	"time"

	"github.com/collabdev/collab/presence"
)

// who --check's rule: alive when awake, fresh and not marked; stuck when
// the oldest unanswered message is older than the limit.
func TestCheck(t *testing.T) {
	now := time.Now()
	old := now.Add(-time.Hour).Format(time.RFC3339Nano)
	row := func(state string, age time.Duration, marked bool, backlog int) AgentRow {
		s := &presence.Status{AgentID: "bob", Backlog: backlog}
		if backlog > 0 {
			s.OldestUnanswered = old
		}
		return AgentRow{Agent: "bob", State: state, Status: s, Age: age, HasAge: true, Marked: marked}
	}
	for _, c := range []struct {
		name         string
		row          AgentRow
		limit        time.Duration
		alive, stuck bool
	}{
		{"idle", row(presence.AwakeIdle, time.Second, false, 0), 0, true, false},
		{"stale", row(presence.AwakeIdle, time.Hour, false, 0), 0, false, false},
		{"forged", row(presence.AwakeIdle, time.Second, true, 0), 0, false, false},
		{"offline", row(presence.Offline, time.Second, false, 0), 0, false, false},
		{"backlog, no limit", row(presence.AwakeWorking, time.Second, false, 2), 0, true, false},
		{"backlog within", row(presence.AwakeWorking, time.Second, false, 2), 2 * time.Hour, true, false},
		{"stuck", row(presence.AwakeWorking, time.Second, false, 2), time.Minute, true, true},
	} {
		alive, stuck := Check([]AgentRow{c.row}, time.Minute, c.limit, now)
		if alive != c.alive || (stuck != nil) != c.stuck {
			t.Errorf("%s: Check = %v, %+v; want alive %v stuck %v", c.name, alive, stuck, c.alive, c.stuck)
		}
		if stuck != nil && (stuck.Agent != "bob" || stuck.Backlog != 2 || stuck.Oldest < time.Hour) {
			t.Errorf("%s: stuck %+v; want bob, 2, an hour", c.name, stuck)
		}
	}
}
