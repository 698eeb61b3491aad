package main

import (
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// recordPath is the file of session id's record.
func recordPath(root tree.Root, id string) string { return sessions.Path(root, id) }

// sessionAlive reports whether s's recorded process still runs it on
// this host (sessions.Alive).
func sessionAlive(s *sessions.Session) bool { return sessions.Alive(s) }
