// Package lookalike decides when one sender's name passes for another's:
// "Alice" for the keyed agent "alice", "c0dex" for "codex", "qc_1" for
// "qc-1". A reader (the watcher, as it builds a prompt) warns when a
// message's sender has no key of its own but its name is a look-alike of
// an agent that has one: a person or a model reading "Alice" would take
// it for alice, and only alice's messages can verify.
//
// # The rule
//
// Two names look alike when they differ but have the same [Skeleton]: the
// name in lower case, with the characters that read alike in agent names
// ([A-Za-z0-9_-]) made one:
//
//	case            A a
//	o               0 o O
//	l               1 l I i | !
//	-               - _ .
//	m               rn (the two letters together)
//	w               vv
//
// Names from outside are not always valid agent names, so a Skeleton also
// drops the characters that show as nothing or as mere space (zero-width
// spaces and joiners, soft hyphens, byte-order marks, white space), reads
// full-width forms as ASCII, and reads the Cyrillic and Greek letters that
// look like Latin ones (а е о р с у х і ј ѕ ο α ν ρ ι κ …) as those. That
// table is short, not Unicode's confusables: a name that is not a valid
// agent name is suspect in itself, and readers show it escaped.
package lookalike

import (
	"strings"
	"unicode"
)

// Skeleton returns the form of name that look-alike names share (see the
// package doc). Skeleton(Skeleton(s)) == Skeleton(s).
func Skeleton(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		if invisible(r) {
			continue
		}
		if 0xff01 <= r && r <= 0xff5e { // full-width ASCII
			r -= 0xff01 - '!'
		}
		// Before and after lowering: an upper-case Greek eta is an H,
		// a lower-case one an n.
		if l, ok := homoglyphs[r]; ok {
			r = l
		}
		r = unicode.ToLower(r)
		if l, ok := homoglyphs[r]; ok {
			r = l
		}
		switch r {
		case '0':
			r = 'o'
		case '1', 'i', '|', '!':
			r = 'l'
		case '_', '.':
			r = '-'
		}
		b.WriteRune(r)
	}
	s := strings.ReplaceAll(b.String(), "rn", "m")
	return strings.ReplaceAll(s, "vv", "w")
}

// Of returns the name among keyed that name passes for: one that is not
// name but has its skeleton. It is "" when there is none, or when name is
// itself in keyed (an agent with keys is itself, verified or not).
func Of(name string, keyed []string) string {
	var sk string
	for _, k := range keyed {
		if k == name {
			return ""
		}
	}
	for _, k := range keyed {
		if sk == "" {
			sk = Skeleton(name)
		}
		if Skeleton(k) == sk {
			return k
		}
	}
	return ""
}

// invisible reports whether r shows as nothing, or as a mere space.
func invisible(r rune) bool {
	switch r {
	case '\u00ad', '\u034f', '\u180e', '\u200b', '\u200c', '\u200d', '\u200e', '\u200f', '\u2060', '\u2061', '\u2062', '\u2063', '\u2064', '\ufeff':
		return true
	}
	return unicode.Is(unicode.Cf, r) || unicode.IsControl(r) || unicode.IsSpace(r)
}

// homoglyphs are Cyrillic and Greek letters that look like Latin ones.
var homoglyphs = map[rune]rune{
	// Cyrillic
	'а': 'a', 'А': 'a', 'в': 'b', 'В': 'b', 'е': 'e', 'Е': 'e', 'ё': 'e',
	'к': 'k', 'К': 'k', 'м': 'm', 'М': 'm', 'н': 'h', 'Н': 'h', 'о': 'o',
	'О': 'o', 'р': 'p', 'Р': 'p', 'с': 'c', 'С': 'c', 'т': 't', 'Т': 't',
	'у': 'y', 'У': 'y', 'х': 'x', 'Х': 'x', 'і': 'i', 'І': 'i', 'ј': 'j',
	'Ј': 'j', 'ѕ': 's', 'Ѕ': 's', 'ԁ': 'd', 'һ': 'h', 'ԛ': 'q', 'ԝ': 'w',
	'Ԝ': 'w', 'ӏ': 'l', 'Ӏ': 'l',
	// Greek
	'α': 'a', 'Α': 'a', 'β': 'b', 'Β': 'b', 'ε': 'e', 'Ε': 'e', 'Ζ': 'z',
	'η': 'n', 'Η': 'h', 'ι': 'i', 'Ι': 'i', 'κ': 'k', 'Κ': 'k', 'Μ': 'm',
	'ν': 'v', 'Ν': 'n', 'ο': 'o', 'Ο': 'o', 'ρ': 'p', 'Ρ': 'p', 'τ': 't',
	'Τ': 't', 'υ': 'u', 'Υ': 'y', 'χ': 'x', 'Χ': 'x',
}
