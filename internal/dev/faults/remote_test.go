package main

import (
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
)

// TestRemoteCheck proves the remote check can fail: of hand-made sends and
// messages on the mount, one landed once, one never, one twice, one under
// another id than its sender was told, and a file no sender sent; a
// message of another agent is not counted.
func TestRemoteCheck(t *testing.T) {
	msg := func(id, from, text string) channel.Message {
		return channel.Message{ID: id, From: from, Content: channel.Content{Text: text}}
	}
	mount := []channel.Message{
		msg("msg-20260111-163315-rem0-0001", "rem0", "once"),
		msg("msg-20260111-163315-rem0-0002", "rem0", "twice"),
		msg("msg-20260111-163316-rem0-0003", "rem0", "twice"),
		msg("msg-20260111-163316-rem1-0004", "rem1", "moved"),
		msg("msg-20260111-163317-rem1-0005", "rem1", "never sent"),
		msg("msg-20260111-163317-alice-0006", "alice", "not a remote sender's"),
		msg("msg-20260111-163318-rem1-0007", "rem1", "queued then flushed"),
	}
	sends := []remoteSend{
		{id: "msg-20260111-163315-rem0-0001", text: "once"},
		{text: "lost", queued: true},
		{id: "msg-20260111-163315-rem0-0002", text: "twice"},
		{id: "msg-20260111-163316-rem1-9999", text: "moved"},
		{text: "queued then flushed", queued: true},
		{id: "msg-20260111-163318-rem1-0007", text: "queued then flushed", queued: true}, // its outbox entry
	}
	v := remoteCheck(mount, map[string]bool{"rem0": true, "rem1": true}, sends)
	want := verdict{Messages: 5, OK: 3, Lost: 1, Duplicated: 1, Corrupt: 2}
	if v.Messages != want.Messages || v.OK != want.OK || v.Lost != want.Lost || v.Duplicated != want.Duplicated || v.Corrupt != want.Corrupt {
		t.Errorf("remoteCheck = %+v, want %+v", v, want)
	}
	details := strings.Join(v.Details, "\n")
	for _, s := range []string{`lost: "lost"`, `"twice" is on the mount as`, "rem1-9999 was told or queued", `says "never sent", which no sender sent`} {
		if !strings.Contains(details, s) {
			t.Errorf("details lack %q:\n%s", s, details)
		}
	}
	if !v.failed() {
		t.Error("the verdict does not fail")
	}
	if v := remoteCheck(mount[:1], map[string]bool{"rem0": true}, sends[:1]); v.failed() || v.OK != 1 {
		t.Errorf("one message sent and landed once: %+v", v)
	}
}
