package bridged

import (
	"context"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
)

// TestDelegationsUnavailable: through a bridge, every delegation
// operation is Unavailable, saying why.
func TestDelegationsUnavailable(t *testing.T) {
	s, ctx := New(nil), context.Background()
	_, e1 := s.Delegate(ctx, service.Actor{Name: "lead"}, service.DelegateRequest{Prompt: "x"})
	_, e2 := s.Sessions(ctx, service.SessionsQuery{})
	_, e3 := s.FindSession(ctx, service.SessionRef{ID: "ab12"})
	_, e4 := s.SessionStatus(ctx, service.SessionRef{ID: "ab12"})
	_, e5 := s.SendToSession(ctx, service.Actor{Name: "lead"}, service.SendToSessionRequest{Text: "x"})
	_, e6 := s.StopSession(ctx, service.StopSessionRequest{})
	_, e7 := s.RemoveSession(ctx, service.RemoveSessionRequest{})
	_, e8 := s.Resume(ctx, service.ResumeRequest{})
	for i, err := range []error{e1, e2, e3, e4, e5, e6, e7, e8} {
		if !errkind.Is(err, errkind.Unavailable) || !strings.Contains(err.Error(), "goes through a bridge") {
			t.Errorf("operation %d: %v, want Unavailable", i+1, err)
		}
	}
}
