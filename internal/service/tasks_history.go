package service

import (
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workspace/task"
)

// JudgedEvent is a task event with the verdict on its signature and
// whether it was left out of the task's state (see package task).
type JudgedEvent struct {
	task.Event
	Verdict signing.Verdict `json:"verdict"`
	Ignored bool            `json:"ignored,omitempty"`
}

// TaskHistory is a task with its judged events, as `collab task show
// --json` gives it.
type TaskHistory struct {
	task.Task
	History []JudgedEvent `json:"history"`
}

// History is s as a TaskHistory.
func (s TaskShown) History() TaskHistory {
	h := TaskHistory{Task: s.Task, History: make([]JudgedEvent, len(s.Events))}
	for i, e := range s.Events {
		h.History[i] = JudgedEvent{e, e.Verdict, e.Ignored}
	}
	return h
}
