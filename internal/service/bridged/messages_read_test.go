package bridged_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
)

// A transcript through a bridge (collab read --remote): the newest page,
// or after an id page by page to the end (at most Limit), with the
// position to follow from.
func TestBridgedReadTranscript(t *testing.T) {
	_, svc, _ := setup(t)
	ctx := context.Background()
	var ids []string
	for i := range 4 {
		res, err := svc.Post(ctx, service.Actor{Name: "rem"}, service.PostRequest{Channel: "dev", Text: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Message.ID)
	}
	texts := func(msgs []channel.Message) string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content.Text)
		}
		return strings.Join(out, ",")
	}
	for _, tt := range []struct {
		name string
		req  service.ReadRequest
		want string
	}{
		{"newest", service.ReadRequest{Channel: "dev", All: true, Limit: 2}, "2,3"},
		{"after", service.ReadRequest{Channel: "dev", All: true, After: ids[0]}, "1,2,3"},
		{"after, at most 1", service.ReadRequest{Channel: "dev", All: true, After: ids[0], Limit: 1}, "1"},
	} {
		p, err := svc.Read(ctx, tt.req)
		if err != nil || texts(p.Messages) != tt.want || len(p.From.Seen) != len(p.Messages) || p.From.Floor.IsZero() {
			t.Errorf("%s: Read = %q from %+v, %v; want %q", tt.name, texts(p.Messages), p.From, err, tt.want)
		}
	}
	if _, err := svc.Read(ctx, service.ReadRequest{Channel: "dev", All: true, Archive: true}); !errkind.Is(err, errkind.Unavailable) {
		t.Errorf("Read with the archive: %v; want Unavailable", err)
	}
}
