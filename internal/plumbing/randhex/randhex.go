// Package randhex makes the random hex strings in collab's file names: the
// four digits that tell apart two messages of one agent in one second, and
// the longer suffixes of temp files, lock tokens and claim owners.
//
// The bytes come from crypto/rand, which never fails on Linux; a name
// drawn here is unpredictable, so another host cannot aim a write at it.
package randhex

import (
	"crypto/rand"
	"encoding/hex"
)

// String returns n random bytes as 2n lowercase hex digits.
func String(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
