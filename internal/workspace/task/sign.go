package task

import (
	"strconv"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
)

// KindEvent is the payload kind of a signed task event.
const KindEvent = "task-event"

// Payload returns the bytes the signature of e covers, e being an event
// of task id of channel (see the package doc).
func (e Event) Payload(channel, id string) []byte {
	fields := []string{channel, id, strconv.Itoa(e.Seq), e.Event, e.Status, e.Owner,
		e.Agent, e.Host, e.Time.UTC().Format(time.RFC3339Nano), e.Summary, e.Outcome, e.Error, e.Note}
	// Appended only when present, so events written before checkpoint
	// types keep their payload and still verify.
	if e.Type != "" || len(e.Files) > 0 || e.Worktree != "" || e.Branch != "" || len(e.Detail) > 0 {
		fields = append(fields, e.Type, strconv.Itoa(len(e.Files)))
		fields = append(fields, e.Files...)
	}
	if e.Worktree != "" || e.Branch != "" {
		fields = append(fields, e.Worktree, e.Branch)
	}
	if len(e.Detail) > 0 {
		fields = append(fields, "detail", e.Detail.String())
	}
	return signing.Payload(KindEvent, fields...)
}

// Verify returns the verdict on e, read as an event of task id of
// channel, as its agent's.
func (e Event) Verify(v *signing.Verifier, channel, id string) signing.Verdict {
	if e.Signature == nil {
		return signing.Unsigned
	}
	return v.Verify(e.Agent, e.Time, e.Payload(channel, id), e.Signature)
}
