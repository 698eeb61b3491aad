package web

import (
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/delivery"
)

// TestSegmentWidths: the steps share the width exactly, each at least
// the least, the rest in proportion to time; steps of no time share it
// equally.
func TestSegmentWidths(t *testing.T) {
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	stages := func(gaps ...time.Duration) []delivery.Stage {
		out := []delivery.Stage{{Time: at}}
		for _, g := range gaps {
			out = append(out, delivery.Stage{Time: out[len(out)-1].Time.Add(g)})
		}
		return out
	}
	for _, c := range []struct {
		name string
		gaps []time.Duration
		want []int
	}{
		{"one step", []time.Duration{time.Second}, []int{960}},
		{"proportional", []time.Duration{time.Second, 3 * time.Second}, []int{36 + 222, 36 + 666}},
		{"a short step shows", []time.Duration{time.Millisecond, time.Hour}, []int{36, 924}},
		{"no time", []time.Duration{0, 0, 0}, []int{320, 320, 320}},
		{"many steps", make([]time.Duration, 40), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := segmentWidths(stages(c.gaps...), barWidth)
			sum := 0
			for _, w := range got {
				sum += w
				if w < 1 {
					t.Errorf("a step %d wide", w)
				}
			}
			if sum != barWidth || len(got) != len(c.gaps) {
				t.Errorf("widths %v: %d steps adding up to %d, want %d to %d", got, len(got), sum, len(c.gaps), barWidth)
			}
			if c.want != nil && !slices.Equal(got, c.want) {
				t.Errorf("widths %v, want %v", got, c.want)
			}
		})
	}
	if segmentWidths(stages(), barWidth) != nil {
		t.Error("a timeline of one stage has steps")
	}
}
