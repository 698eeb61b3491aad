package delivery

import "testing"

func TestCell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "-"},
		{"vm-2", "vm-2"},
		{"a b", `a\x20b`},
		{"a\tb\nc", `a\x09b\x0ac`},
		{"\x1b[31mred", `\x1b[31mred`},
		{"höst", "höst"},
	}
	for _, tt := range tests {
		if got := Cell(tt.in); got != tt.want {
			t.Errorf("Cell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
