package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/delivery"
)

// TestStatusTimeline: a message sent with send --wait to a real watcher
// has, in status --timeline, its stages from sent to reply_seen (the
// sender's mark), each with its gap; --json carries the same timeline.
func TestStatusTimeline(t *testing.T) {
	root := newTree(t)
	startWatcher(t, root, "codex", "dev", nil)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
	r := runCollab(t, env, "", "send", "--wait", "--json", "--agent", "human", "--to", "codex", "--poll", "50ms", "--timeout", "1m", "hello")
	var reply struct {
		ID        string `json:"id"`
		InReplyTo string `json:"in_reply_to"`
		Metadata  struct {
			InReplyTo string `json:"in_reply_to"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &reply); r.code != 0 || err != nil {
		t.Fatalf("send --wait: exit %d, %v, stdout %q, stderr %q", r.code, err, r.stdout, r.stderr)
	}
	id := reply.Metadata.InReplyTo

	r = runCollab(t, env, "", "status", "--timeline", id)
	if r.code != 0 {
		t.Fatalf("status --timeline: exit %d, stderr %q", r.code, r.stderr)
	}
	t.Logf("status --timeline:\n%s", r.stdout)
	_, table, ok := strings.Cut(r.stdout, "\n\n")
	if !ok {
		t.Fatalf("status --timeline: no timeline after the status:\n%s", r.stdout)
	}
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "AGENT STAGE TIME GAP TOTAL VIA HOST" {
		t.Errorf("header %q", got)
	}
	var stages []string
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 7 || f[0] != "codex" {
			t.Fatalf("row %q: want 7 columns for codex", l)
		}
		stages = append(stages, f[1])
		if (i == 0) != (f[3] == "-") || (i > 0 && !strings.HasPrefix(f[3], "+")) {
			t.Errorf("row %q: gap %q", l, f[3])
		}
		if f[1] == delivery.StageVisible && f[5] != delivery.ViaFsnotify && f[5] != delivery.ViaPoll {
			t.Errorf("visible via %q", f[5])
		}
		if f[1] == delivery.StageReplySeen && f[5] != "human" {
			t.Errorf("reply_seen via %q, want the sender", f[5])
		}
	}
	for _, want := range []string{delivery.StageSent, delivery.StageVisible, delivery.StageSeen, delivery.StageClaimed,
		delivery.StageRunStarted, delivery.StageReplied, delivery.StageReplySeen} {
		if !slices.Contains(stages, want) {
			t.Errorf("stages %v: no %s\n%s", stages, want, r.stdout)
		}
	}

	r = runCollab(t, env, "", "status", "--timeline", "--json", id)
	var st delivery.Status
	if err := json.Unmarshal([]byte(r.stdout), &st); r.code != 0 || err != nil {
		t.Fatalf("status --timeline --json: exit %d, %v", r.code, err)
	}
	if len(st.Addressees) != 1 || st.Addressees[0].Timeline == nil || len(st.Addressees[0].Timeline.Stages) != len(stages) {
		t.Errorf("status --json: %+v, want the %d stages", st, len(stages))
	}
	if r := runCollab(t, env, "", "status", "--json", id); strings.Contains(r.stdout, `"timeline"`) {
		t.Errorf("status --json without --timeline has a timeline: %s", r.stdout)
	}
}
