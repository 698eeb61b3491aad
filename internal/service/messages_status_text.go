package service

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/collabdev/collab/internal/delivery"
)

// StatusText is st as collab status prints it: a header line, a table of
// the addressees' states at now and, when the status carries timelines
// (StatusRequest.Timeline), a blank line and the table of their stages
// (delivery.Status.TimelineTable).
func StatusText(st delivery.Status, now time.Time) string {
	var b strings.Builder
	fmt.Fprintln(&b, st.Header())
	if st.Broadcast {
		b.WriteString("broadcast: no addressee\n")
		return b.String()
	}
	writeTable(&b, st.Table(now))
	if slices.ContainsFunc(st.Addressees, func(a delivery.Addressee) bool { return a.Timeline != nil }) {
		b.WriteByte('\n')
		writeTable(&b, st.TimelineTable())
	}
	return b.String()
}

// writeTable writes rows as aligned columns, two spaces apart.
func writeTable(b *strings.Builder, rows [][]string) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}
