package modelcli_test

import (
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

func TestParseAnswer(t *testing.T) {
	for _, tt := range []struct {
		text          string
		allow, always bool
	}{
		{"allow", true, false},
		{"Allow.", true, false},
		{"yes, go ahead", true, false},
		{"Y", true, false},
		{"always", true, true},
		{"Always!", true, true},
		{"allow always", true, true},
		{"yes always", true, true},
		{"allow, always", true, true},
		{"allowing it is fine", false, false},
		{"deny", false, false},
		{"no", false, false},
		{"not that one", false, false},
		{"", false, false},
		{"   ", false, false},
		{"always-on", false, false},
	} {
		a := modelcli.ParseAnswer(tt.text)
		if a.Allow != tt.allow || a.Always != tt.always || a.Text != tt.text {
			t.Errorf("ParseAnswer(%q) = %+v, want allow %v always %v", tt.text, a, tt.allow, tt.always)
		}
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{"allow", "always", "yes always", "deny", "", "Allow.\n", "ÿes"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		a := modelcli.ParseAnswer(text)
		if a.Text != text || (a.Always && !a.Allow) {
			t.Fatalf("ParseAnswer(%q) = %+v", text, a)
		}
	})
}
