package tree

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Protocol is the version of the collab protocol this code speaks
// (docs/protocol.md#versioning).
const Protocol = 1

// VersionName is the file at the tree's root that records its protocol
// version.
const VersionName = "collab.json"

// Version is ROOT/collab.json: the protocol the tree is written in.
type Version struct {
	Protocol int    `json:"protocol"`
	Created  string `json:"created,omitempty"` // RFC 3339, when init wrote it
}

// NewVersion is the version file init writes: this code's protocol.
func NewVersion(now time.Time) []byte {
	b, _ := json.Marshal(Version{Protocol: Protocol, Created: now.UTC().Format(time.RFC3339)}) // cannot fail
	return append(b, '\n')
}

// Protocol returns the tree's protocol version: 1 when ROOT/collab.json
// is absent (a tree made before it was written). The file counts only
// when the root folder's owner wrote it (the admin who ran init): in a
// tree shared with a group, a member who could create it cannot make the
// others refuse the tree. An unreadable or malformed file of the owner's
// is an error.
func (r Root) Protocol() (int, error) {
	p := filepath.Join(string(r), VersionName)
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	rootInfo, err := os.Stat(string(r))
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() || owner(fi) != owner(rootInfo) {
		return 1, nil // not the admin's: not the tree's version
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return 0, err
	}
	var v Version
	if err := json.Unmarshal(data, &v); err != nil || v.Protocol < 1 {
		return 0, fmt.Errorf("%s is not a version file (want {\"protocol\": N}): %v", p, err)
	}
	return v.Protocol, nil
}

// CheckProtocol refuses a tree written in a newer protocol than this
// code speaks: it would misread what it does not know, or write what the
// others no longer expect.
func (r Root) CheckProtocol() error {
	p, err := r.Protocol()
	if err != nil {
		return err
	}
	if p > Protocol {
		return fmt.Errorf("%s is written in collab protocol %d, and this collab speaks protocol %d: upgrade collab", string(r), p, Protocol)
	}
	return nil
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
