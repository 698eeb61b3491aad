package task

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The types of checkpoint (seed 003's): what a checkpoint records.
const (
	CkPlan     = "plan"     // the approach
	CkProgress = "progress" // a step done (the default)
	CkDecision = "decision" // a choice made, and why
	CkError    = "error"    // something went wrong
	CkRecovery = "recovery" // work resumed after an error or a lost context
	CkComplete = "complete" // the work is complete (the task is finished by done)
)

// CheckpointTypes lists the checkpoint types, in the order above.
var CheckpointTypes = []string{CkPlan, CkProgress, CkDecision, CkError, CkRecovery, CkComplete}

// ErrCheckpointType is wrapped by the error for a type not in
// CheckpointTypes.
var ErrCheckpointType = errors.New("task: unknown checkpoint type")

// CheckType returns an error wrapping ErrCheckpointType unless typ is one
// of CheckpointTypes.
func CheckType(typ string) error {
	if !slices.Contains(CheckpointTypes, typ) {
		return fmt.Errorf("%w %q (one of %s)", ErrCheckpointType, typ, strings.Join(CheckpointTypes, ", "))
	}
	return nil
}

// Checkpoint is what Record records: a type (default CkProgress), the
// detail text, the files changed and a structured detail (a JSON object,
// see ParseDetail; nil: none). Finish takes its Detail as the outcome's.
type Checkpoint struct {
	Type   string
	Text   string
	Files  []string
	Detail Detail
}

// Record records checkpoint c on a task agent has claimed. Like
// Checkpoint it counts as the owner's sign of life.
func (b *Board) Record(id, agent string, c Checkpoint) (Task, error) {
	return b.own(id, agent, EvCheckpoint, c.Text, c)
}

// checkCheckpoint checks an event's type and files: only a checkpoint has
// them, a known type, at most MaxFiles names of one line each.
func checkCheckpoint(e Event) error {
	if e.Event != EvCheckpoint {
		if e.Type != "" || len(e.Files) > 0 {
			return fmt.Errorf("event %s with a checkpoint type or files", e.Event)
		}
		return nil
	}
	if e.Type != "" {
		if err := CheckType(e.Type); err != nil {
			return err
		}
	}
	if len(e.Files) > MaxFiles {
		return fmt.Errorf("more than %d files", MaxFiles)
	}
	for _, f := range e.Files {
		switch {
		case strings.TrimSpace(f) == "":
			return errors.New("an empty file name")
		case len(f) > MaxFile:
			return fmt.Errorf("a file name longer than %d bytes", MaxFile)
		case !utf8.ValidString(f) || strings.ContainsFunc(f, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return fmt.Errorf("file name %q has a control character or is not UTF-8", f)
		}
	}
	return nil
}
