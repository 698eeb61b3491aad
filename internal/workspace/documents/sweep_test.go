package documents

import "testing"

func TestLeftover(t *testing.T) {
	for name, want := range map[string]bool{
		".notes.md.ab12.tmp": true, ".notes.md.lock.0a1b": true,
		".notes.md.lock": false, "notes.md": false, ".lock.": false, ".x.lock.": false, "a.lock.b": false,
	} {
		if got := leftover(name); got != want {
			t.Errorf("leftover(%q) = %v, want %v", name, got, want)
		}
	}
}
