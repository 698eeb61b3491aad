package service

import (
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/workflow"
)

// KeysText is keys as collab key prints them: one line a key, by agent,
// trusted or revoked since when.
func KeysText(keys []KeyEntry) string {
	var b strings.Builder
	for _, r := range keys {
		state := "trusted"
		if r.Revoked != nil {
			state = "revoked " + r.Revoked.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(&b, "%-12s %s  added %s  %s\n", workflow.Address(r.Agent), r.Key, r.Added.UTC().Format(time.RFC3339), state)
	}
	return b.String()
}
