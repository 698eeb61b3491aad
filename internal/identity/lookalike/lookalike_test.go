package lookalike_test

import (
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/identity/lookalike"
)

func TestOf(t *testing.T) {
	keyed := []string{"alice", "codex", "qc-1", "mimi", "bob"}
	for _, tt := range []struct {
		name, want string
	}{
		{"alice", ""}, // itself
		{"Alice", "alice"},
		{"ALICE", "alice"},
		{"aIice", "alice"}, // capital i for l
		{"a1ice", "alice"},
		{"alicE", "alice"},
		{"c0dex", "codex"},
		{"C0DEX", "codex"},
		{"qc_1", "qc-1"},
		{"QC-l", "qc-1"},
		{"qc-I", "qc-1"},
		{"rnirni", "mimi"},
		{"mirni", "mimi"},
		{"аlice", "alice"},       // Cyrillic а
		{"ａｌｉｃｅ", "alice"},       // full width
		{"ali\u200bce", "alice"}, // a zero-width space
		{" alice ", "alice"},     // white space
		{"alice\n", "alice"},     // a line break
		{"al ice", "alice"},      // a space inside
		{"Βob", "bob"},           // Greek capital beta
		{"alicia", ""},           // another name
		{"codex2", ""},           // another name
		{"qc-10", ""},            // another name
		{"", ""},                 // nothing
		{"m", ""},
	} {
		if got := lookalike.Of(tt.name, keyed); got != tt.want {
			t.Errorf("Of(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := lookalike.Of("Alice", nil); got != "" {
		t.Errorf("Of with no keyed names = %q", got)
	}
}

func TestSkeleton(t *testing.T) {
	for in, want := range map[string]string{
		"Alice": "allce", "c0dex": "codex", "qc_1": "qc-l", "rn": "m", "vvork": "work", "Ηello": "hello",
	} {
		if got := lookalike.Skeleton(in); got != want {
			t.Errorf("Skeleton(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzSkeleton: a skeleton is its own skeleton; a name never passes for
// itself; changing the case of an ASCII name keeps its skeleton, and a
// name whose ASCII case changed passes for the original when they differ.
func FuzzSkeleton(f *testing.F) {
	for _, s := range []string{"alice", "Alice", "c0dex", "qc_1", "rnrn", "vvv", "аlice", "ａｌｉｃｅ", "Ηello", "\u200b", "ʀɴ", "İ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sk := lookalike.Skeleton(s)
		if again := lookalike.Skeleton(sk); again != sk {
			t.Fatalf("Skeleton(%q) = %q, whose skeleton is %q", s, sk, again)
		}
		if got := lookalike.Of(s, []string{s}); got != "" {
			t.Fatalf("Of(%q, itself) = %q", s, got)
		}
		up := asciiUpper(s)
		if lookalike.Skeleton(up) != sk {
			t.Fatalf("Skeleton(%q) = %q, but Skeleton(%q) = %q", s, sk, up, lookalike.Skeleton(up))
		}
		if up != s {
			if got := lookalike.Of(up, []string{s}); got != s {
				t.Fatalf("Of(%q, [%q]) = %q, want %q", up, s, got, s)
			}
		}
	})
}

func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}
