package web

import (
	"slices"
	"strings"
	"testing"
)

func TestSegments(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []segment
	}{
		{"empty", "", nil},
		{"prose", "a\nb", []segment{{Text: "a\nb"}}},
		{"code", "see:\n```go\nx := 1\n```\ndone", []segment{{Text: "see:"}, {Code: true, Lang: "go", Text: "x := 1"}, {Text: "done"}}},
		{"unclosed", "```\n<b>", []segment{{Code: true, Text: "<b>"}}},
		{"empty block", "```\n```", []segment{{Code: true}}},
		{"indented fence", "  ```sh\nls\n  ```", []segment{{Code: true, Lang: "sh", Text: "ls"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := segments(tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("segments(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
		})
	}
}

// FuzzSegments checks that segments keeps the text of every line that is
// not a fence, in order, and leaves no fence in a segment.
func FuzzSegments(f *testing.F) {
	f.Add("a\n```go\nb\n```\nc")
	f.Add("```")
	f.Fuzz(func(t *testing.T, text string) {
		var want strings.Builder
		for line := range strings.SplitSeq(text, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "```") {
				want.WriteString(line)
			}
		}
		var got strings.Builder
		for _, s := range segments(text) {
			for line := range strings.SplitSeq(s.Text, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "```") {
					t.Fatalf("segments(%q): a fence in %+v", text, s)
				}
				got.WriteString(line)
			}
		}
		if got.String() != want.String() {
			t.Errorf("segments(%q) keeps %q, want %q", text, got.String(), want.String())
		}
	})
}
