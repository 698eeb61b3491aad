package bridged

import (
	"context"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/bridge"
)

// transcript is Read with All through the bridge: the newest page, or
// after message After every message page by page (at most Limit), and
// the position to follow from: the last message's time, the ids read.
func (s *Service) transcript(ctx context.Context, req service.ReadRequest) (service.Page, error) {
	if req.Archive {
		return service.Page{}, errkind.New(errkind.Unavailable, "read: the archive is not served through a bridge")
	}
	if req.Newer != 0 || req.Since != "" {
		return service.Page{}, errkind.New(errkind.Unavailable, "read: a transcript through a bridge goes after a message id, not by age")
	}
	var out service.Page
	last := req.After
	for read := 0; ; {
		n := req.Limit
		if req.After != "" && req.Limit > 0 {
			n = min(req.Limit-read, bridge.MaxReadLimit)
		}
		page, err := s.Read(ctx, service.ReadRequest{Channel: req.Channel, After: last, Limit: n})
		if err != nil {
			return service.Page{}, err
		}
		out.Messages = append(out.Messages, page.Messages...)
		out.Omitted = append(out.Omitted, page.Omitted...)
		for _, m := range page.Messages {
			out.From.Seen = append(out.From.Seen, m.ID+".json")
		}
		read += len(page.Messages) + len(page.Omitted)
		if page.Last != "" {
			last = page.Last
		}
		// The newest page is one page; after an id, page on to the end.
		if req.After == "" || !page.More || page.Last == "" || req.Limit > 0 && read >= req.Limit {
			break
		}
	}
	out.Last = last
	out.From.Floor = time.Now()
	if n, err := channel.ParseID(last); err == nil {
		out.From.Floor = n.Time
	}
	return out, nil
}
