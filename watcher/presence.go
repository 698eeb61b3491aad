package watcher

import (
	"os"

	"collab/presence"
)

// setPresence writes the agent's heartbeat. what is presence.SubIdle or
// presence.SubWorking (with the message id), or presence.StateOffline.
func (w *watcher) setPresence(what, msgID string) {
	s := presence.Status{
		AgentID:    w.cfg.Agent,
		Timestamp:  presence.FormatTime(w.now()),
		State:      presence.StateAwake,
		Substate:   what,
		WatcherPID: os.Getpid(),
		Channel:    w.cfg.Channels[0],
		Host:       w.cfg.Host,
		MessageID:  msgID,
		Started:    presence.FormatTime(w.started),
		Queue:      len(w.queue),
		Counters:   map[string]int64{"handled": int64(w.handled), "failed": int64(w.failed)},
	}
	if n := len(w.outbox.entries); n > 0 {
		s.Counters["outbox"] = int64(n) // replies waiting to be posted
	}
	if what == presence.StateOffline {
		s.State, s.Substate = presence.StateOffline, ""
	}
	if len(w.cfg.Channels) > 1 {
		s.Channels = w.cfg.Channels
	}
	if !w.lastReply.IsZero() {
		s.LastReply = w.lastReplyID
	}
	if err := presence.Write(w.cfg.Root, s); err != nil {
		w.logOnce("presence", "cannot write presence", keyErr, err)
	}
	if w.cfg.Publisher != nil {
		w.cfg.Publisher.PublishPresence(s) // logged and counted by the publisher
	}
}
