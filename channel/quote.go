package channel

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxQuoted is how many bytes of a value [Quote] shows; the rest is cut.
const MaxQuoted = 200

// Quote returns s, a value that came from someone else (a sender's name, a
// message or job id, an error, a tool rule), as it may be put into a
// message or note that collab writes and signs: in double quotes, escaped
// as a Go string literal (strconv.Quote: no line break, no control or
// other non-printing character, invalid UTF-8 as \x..), with every '@' as
// \x40, and cut to its first MaxQuoted bytes (then "…" follows the closing
// quote). Such a value cannot begin a line of the message, add lines to
// it, or @mention anyone: put into a notice, it addresses no one
// ([Message.IsFor]) and reads as a quotation, never as collab's own words.
// An uncut result unquotes (strconv.Unquote) to s.
//
// Every value from outside that collab signs into a message, a claim's
// note or a seen file's reason goes through Quote; one owner, so that the
// rule cannot drift between callers.
func Quote(s string) string {
	cut := ""
	if len(s) > MaxQuoted {
		n := MaxQuoted
		for i := 0; i < utf8.UTFMax-1 && !utf8.RuneStart(s[n]); i++ {
			n-- // not into the middle of a character
		}
		s, cut = s[:n], "…"
	}
	return strings.ReplaceAll(strconv.Quote(s), "@", `\x40`) + cut
}
