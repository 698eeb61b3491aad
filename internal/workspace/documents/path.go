package documents

import (
	"errors"
	"fmt"
	"strings"
)

// EntryPoint is the document read and written when no file is named.
const EntryPoint = "notes.md"

// Limits of a document path.
const (
	MaxElemLen = 128 // bytes in one element
	MaxPathLen = 512 // bytes in the whole path
	MaxDepth   = 16  // elements
)

// ErrBadPath is wrapped by every error CheckPath returns.
var ErrBadPath = errors.New("documents: invalid document path")

// CheckPath reports whether p names a document inside a channel's folder:
// a relative path of slash-separated elements of letters, digits, '.', '_'
// and '-', none empty or starting with '.' or '-'.
func CheckPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrBadPath)
	case len(p) > MaxPathLen:
		return fmt.Errorf("%w: %.20q… is longer than %d bytes", ErrBadPath, p, MaxPathLen)
	case p[0] == '/':
		return fmt.Errorf("%w: %q is absolute; name a file inside the channel's folder", ErrBadPath, p)
	}
	elems := strings.Split(p, "/")
	if len(elems) > MaxDepth {
		return fmt.Errorf("%w: %q is more than %d folders deep", ErrBadPath, p, MaxDepth)
	}
	for _, e := range elems {
		switch {
		case e == "":
			return fmt.Errorf("%w: %q has an empty element", ErrBadPath, p)
		case e == "." || e == "..":
			return fmt.Errorf("%w: %q has %q; paths may not climb", ErrBadPath, p, e)
		case e[0] == '.':
			return fmt.Errorf("%w: %q names a dot-file", ErrBadPath, p)
		case e[0] == '-':
			return fmt.Errorf("%w: %q has an element starting with '-'", ErrBadPath, p)
		case len(e) > MaxElemLen:
			return fmt.Errorf("%w: %q has an element longer than %d bytes", ErrBadPath, p, MaxElemLen)
		}
		for i := 0; i < len(e); i++ {
			if !pathByte(e[i]) {
				return fmt.Errorf("%w: %q has %q; use only letters, digits, '.', '_', '-' and '/'", ErrBadPath, p, e[i])
			}
		}
	}
	return nil
}

func pathByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}
