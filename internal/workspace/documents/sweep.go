package documents

import (
	"os"
	"path"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/safedir"
)

// sweep removes what crashed writers left next to the documents of dir
// (a folder of the root, "." for the top): temp files (".NAME.RANDOM.tmp")
// and a locker's own files (".NAME.lock.TOKEN"), once they are older than
// safedir.DefaultOrphanAge. A live writer holds such a file for
// milliseconds, so nothing in use is touched. Failures are ignored: the
// next change sweeps again.
func sweep(r *os.Root, dir string, now time.Time) {
	d, err := r.Open(dir)
	if err != nil {
		return
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !leftover(name) {
			continue
		}
		p := path.Join(dir, name)
		fi, err := r.Lstat(p)
		if err != nil || now.Sub(fi.ModTime()) < safedir.DefaultOrphanAge {
			continue
		}
		r.Remove(p)
	}
}

// leftover reports whether name is a temp file or a locker's own file.
func leftover(name string) bool {
	if !strings.HasPrefix(name, ".") {
		return false
	}
	if safedir.IsTemp(name) {
		return true
	}
	i := strings.LastIndex(name, ".lock.")
	return i > 0 && i+len(".lock.") < len(name)
}
