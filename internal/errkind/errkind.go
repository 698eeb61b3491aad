// Package errkind is collab's one vocabulary of what went wrong with an
// operation: invalid input, nothing there, refused, forbidden, not
// reachable now, too late, kept for later. The service layer
// (internal/service) gives each error it returns a kind; each door maps
// the kind once, at its edge: cmd/collab to an exit code, the web API to
// an HTTP status, the MCP server to a JSON-RPC error or a tool error, the
// bridge to a code on its wire. Nothing between a door and the layer
// looks at error text.
//
// A kind travels in the error chain: Wrap and New attach one, Of finds
// it. An error that carries none is Failed, except for the standard
// library's own: fs.ErrNotExist is NotFound, fs.ErrPermission Forbidden,
// context.DeadlineExceeded Timeout.
package errkind

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Kind is what went wrong, as a caller decides what to do about it.
type Kind int

const (
	// Failed: something broke (a disk, a process); trying again may work.
	Failed Kind = iota
	// Invalid: the request itself is wrong (a bad name, an empty text, a
	// flag out of range); it will never work as given.
	Invalid
	// NotFound: what the request names is not there.
	NotFound
	// Conflict: refused because of the state of things: held by another,
	// changed since read, already running, still dirty.
	Conflict
	// Forbidden: the caller may not do this (another account's file, a
	// job of another agent, a signature that does not verify).
	Forbidden
	// Unavailable: this way in cannot do it now, or at all (no bridge
	// reachable, an operation a bridged host does not have).
	Unavailable
	// Timeout: nothing came within the time given.
	Timeout
	// Queued: not done yet, but kept and sent later (a remote host's
	// outbox when its bridge cannot be reached).
	Queued
)

var names = [...]string{
	Failed: "failed", Invalid: "invalid", NotFound: "not found", Conflict: "conflict",
	Forbidden: "forbidden", Unavailable: "unavailable", Timeout: "timeout", Queued: "queued",
}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(names) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return names[k]
}

// Error is an error with its kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Wrap gives err the kind k; Wrap of nil is nil. The text is err's.
func Wrap(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: k, Err: err}
}

// New is an error of kind k with the text fmt.Errorf makes (%w works).
func New(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Err: fmt.Errorf(format, args...)}
}

// Kinder is an error type that knows its own kind, for packages below
// the service layer whose errors have one whatever the caller.
type Kinder interface{ Kind() Kind }

// Of returns the kind of err: the first one its chain carries (an *Error
// or a Kinder), else the standard library's, else Failed. Of(nil) is
// Failed; callers test err != nil first.
func Of(err error) Kind {
	if k, ok := Carried(err); ok {
		return k
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return NotFound
	case errors.Is(err, fs.ErrPermission):
		return Forbidden
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout
	}
	return Failed
}

// Carried returns the first kind err's chain carries (an *Error or a
// Kinder), and false when it carries none: an error from below the layer
// that no one has classified yet.
func Carried(err error) (Kind, bool) {
	for e := err; e != nil; {
		switch v := e.(type) {
		case *Error:
			return v.Kind, true
		case Kinder:
			return v.Kind(), true
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				if k, ok := Carried(x); ok {
					return k, true
				}
			}
			return Failed, false
		default:
			return Failed, false
		}
	}
	return Failed, false
}

// Is reports whether err is of kind k.
func Is(err error, k Kind) bool { return err != nil && Of(err) == k }
