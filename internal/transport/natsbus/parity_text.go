package natsbus

import (
	"fmt"
	"strings"
	"time"
)

// Text is p as collab nats parity prints it: the counts, then each list
// of ids that is not empty.
func (p ParityReport) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "channel %s since %s: %d files, %d in the stream\n", p.Channel, p.Since.Format(time.RFC3339), p.Files, p.Stream)
	for _, l := range []struct {
		what string
		ids  []string
	}{{"missing in the stream", p.MissingInStream}, {"missing in the folder", p.MissingInFolder}, {"stored twice in the stream", p.Duplicates}} {
		if len(l.ids) > 0 {
			fmt.Fprintf(&b, "%s (%d):\n  %s\n", l.what, len(l.ids), strings.Join(l.ids, "\n  "))
		}
	}
	return b.String()
}
