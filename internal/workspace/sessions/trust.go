package sessions

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/collabdev/collab/internal/plumbing/safedir"
)

// RecordPerm is the mode records are written with: the umask can take
// bits away, never give the group or others the right to write.
const RecordPerm fs.FileMode = 0o644

// Refusals of a record file (see Trust in the package doc). Both come
// wrapped in a [*RecordError].
var (
	ErrForeign = errors.New("sessions: record is another account's")
	ErrUnsafe  = errors.New("sessions: record could have been written by another account")
)

// RecordError is the refusal of a record file to act on: it names the
// file, its owner, mode and links, and says what to do.
type RecordError struct {
	Path  string
	UID   int // the file's owner
	Mode  fs.FileMode
	Links uint64
	Acct  int    // the account acting
	Err   error  // ErrForeign or ErrUnsafe
	why   string // for ErrUnsafe: what is wrong
}

func (e *RecordError) Error() string {
	if e.Err == ErrForeign {
		return fmt.Sprintf("the record %s is not this account's (its owner is uid %d, this account uid %d); run this as its owner", e.Path, e.UID, e.Acct)
	}
	return fmt.Sprintf("refusing the record %s (owner uid %d, mode %v, %d links): %s, so another account could have set what it runs; chmod go-w %s after checking its contents, or remove it",
		e.Path, e.UID, e.Mode, e.Links, e.why, e.Path)
}

func (e *RecordError) Unwrap() error { return e.Err }

// FileStat is what a reader saw of a record's file, taken from the
// descriptor it read the record through (not by its name again, which
// another account could have pointed elsewhere meanwhile).
type FileStat struct {
	UID   int
	Mode  fs.FileMode
	Links uint64
	set   bool
}

// Set reports whether st was taken from a file (a record read from one).
func (st FileStat) Set() bool { return st.set }

// StatOf is fi's owner, mode and links; fi is from a file's descriptor
// (safedir's ReadFile gives it).
func StatOf(fi fs.FileInfo) FileStat {
	st := FileStat{UID: -1, Mode: fi.Mode(), set: true}
	if uid, links, ok := safedir.Ownership(fi); ok {
		st.UID, st.Links = uid, links
	}
	return st
}

// Check refuses a record file at path, of stat st, that the account uid
// may not act on (run what it says, signal its process, remove what it
// names): one owned by another account ([ErrForeign]), and one whose
// contents another account could have set ([ErrUnsafe]): not a regular
// file, writable by its group or others, or with another name (a hard
// link: another file of this account, not a record written as one).
// The folder's sticky bit (collab init --group) keeps others from
// renaming a file of theirs over it; this is what can be checked of the
// file itself.
func (st FileStat) Check(path string, uid int) error {
	e := &RecordError{Path: path, UID: st.UID, Mode: st.Mode, Links: st.Links, Acct: uid, Err: ErrUnsafe}
	switch {
	case !st.set:
		e.why = "it was not read"
	case st.UID != uid:
		e.Err = ErrForeign
	case !st.Mode.IsRegular():
		e.why = "it is not a regular file"
	case st.Mode.Perm()&0o022 != 0:
		e.why = "it is writable by its group or others"
	case st.Links != 1:
		e.why = "it has other names (hard links)"
	default:
		return nil
	}
	return e
}
