package channel

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// SinceMargin is how far before a since point a message may be named and
// still be read for a timestamp after it (a writer whose name and
// timestamp disagree); names further back are not read.
const SinceMargin = time.Minute

// NewestSince returns the newest n messages of a channel that come after
// since, in channel order, oldest first, and whether older ones after
// since were left out by n. since is one of:
//
//   - "": no bound, the channel's newest n;
//   - a message id of the channel: the messages after it in channel order
//     (the time in the name, then the timestamp, then the file name);
//   - a message id no longer in the channel: the messages whose timestamp
//     is after the time in its name;
//   - an ISO-8601 time (RFC 3339, or 2006-01-02T15:04:05, 2006-01-02T15:04,
//     2006-01-02, read as UTC without a zone): the messages whose timestamp
//     is after it.
//
// Names more than [SinceMargin] before the point are never read, so the
// cost follows what is returned, as [Newest]'s. A since that is none of
// these is a *[SinceError], and nothing is read.
func NewestSince(root tree.Root, channel, since string, n int) (msgs []Message, more bool, skips []Skip, err error) {
	var keep func(string, Name) bool
	var accept func(*Message) bool
	if since != "" {
		if keep, accept, err = sinceFilter(root, channel, since); err != nil {
			return nil, false, nil, err
		}
	}
	// One more than asked: whether it exists is "more" (Newest's own
	// count includes names its filters would refuse).
	msgs, _, skips, err = Newest(root, channel, n+1, keep, accept)
	if len(msgs) > n {
		msgs, more = msgs[len(msgs)-n:], true
	}
	return msgs, more, skips, err
}

// sinceFilter returns the filters, for [Newest], of the messages after
// since (see [NewestSince]).
func sinceFilter(root tree.Root, channel, since string) (func(string, Name) bool, func(*Message) bool, error) {
	if n, err := ParseID(since); err == nil {
		if m, err := Lookup(root, channel, since); err == nil {
			at, ts := n.Time, m.Time()
			keep := func(_ string, nm Name) bool { return !nm.Time.Before(at) }
			return keep, func(o *Message) bool {
				on, _ := ParseName(o.File)
				return cmp.Or(on.Time.Compare(at), o.Time().Compare(ts), strings.Compare(o.File, m.File)) > 0
			}, nil
		}
		return After(n.Time, SinceMargin), func(o *Message) bool { return o.Time().After(n.Time) }, nil
	}
	t, err := parseSinceTime(since)
	if err != nil {
		return nil, nil, &SinceError{Since: since}
	}
	return After(t, SinceMargin), func(o *Message) bool { return o.Time().After(t) }, nil
}

// SinceError is a since that [NewestSince] does not take.
type SinceError struct{ Since string }

func (e *SinceError) Error() string {
	return fmt.Sprintf("since %q is neither a message id nor an ISO-8601 timestamp", tree.Printable(e.Since))
}

// parseSinceTime parses the time forms [NewestSince] takes, in UTC.
func parseSinceTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("bad time")
}
