package main

import (
	"strings"
	"testing"
	"time"
)

// TestInboxPeekLimit: inbox --peek shows the newest --limit unread
// messages and says how many more there may be; --limit 0 shows all; a
// check (which acknowledges all it shows) takes no --limit.
func TestInboxPeekLimit(t *testing.T) {
	root := newTree(t)
	base := time.Date(2026, 1, 11, 16, 33, 0, 0, time.UTC)
	var ids []string
	for i := range 5 {
		ids = append(ids, "dev/"+post(t, root, "dev", "claude", "codex", "do it", base.Add(time.Duration(i)*time.Second)).ID)
	}
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_AGENT": "codex"}

	r := runCollab(t, env, "", "inbox", "--peek", "--json", "--limit", "2")
	got, _ := inboxIDs(t, r.stdout)
	if r.code != 0 || strings.Join(got, ",") != strings.Join(ids[3:], ",") {
		t.Errorf("peek --limit 2: exit %d, %v, want %v (%s)", r.code, got, ids[3:], r.stderr)
	}
	if !strings.Contains(r.stderr, "up to 3 more unread") {
		t.Errorf("peek --limit 2 stderr = %q, want how many more", r.stderr)
	}
	r = runCollab(t, env, "", "inbox", "--peek", "--json", "--limit", "0")
	if got, _ := inboxIDs(t, r.stdout); r.code != 0 || len(got) != 5 || r.stderr != "" {
		t.Errorf("peek --limit 0: exit %d, %v, %q; want all 5", r.code, got, r.stderr)
	}
	r = runCollab(t, env, "", "inbox", "--peek", "--json")
	if got, _ := inboxIDs(t, r.stdout); r.code != 0 || len(got) != 5 || r.stderr != "" {
		t.Errorf("peek (default limit %d): exit %d, %v, %q; want all 5", defaultPeekLimit, r.code, got, r.stderr)
	}
	for _, args := range [][]string{{"--limit", "2"}, {"--peek", "--limit", "-1"}} {
		if r := runCollab(t, env, "", append([]string{"inbox"}, args...)...); r.code != 2 {
			t.Errorf("inbox %v: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
	}
	// Nothing was acknowledged.
	if r := runCollab(t, env, "", "inbox", "--json"); r.code != 0 || strings.Count(r.stdout, "\n") != 5 {
		t.Errorf("check after peeks: exit %d, %q", r.code, r.stdout)
	}
}
