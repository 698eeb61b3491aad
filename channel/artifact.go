package channel

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Artifact is one of a message's content.artifacts, which the seed
// calls file references: a file that stays where it is, named by its
// path, with its size and SHA-256 so that a reader can tell whether the
// file it finds is the one that was sent. The file is not copied into
// the tree: a path is only as good as the folder it names is shared
// (the mount, or a folder every host sees).
//
// collab writes {"path", "size", "sha256"} ([FileArtifact]); other
// writers' artifacts are read liberally ([Content.ArtifactList]).
type Artifact struct {
	Path   string `json:"path"`
	Size   *int64 `json:"size,omitempty"`   // nil: not said
	SHA256 string `json:"sha256,omitempty"` // lowercase hex; "": not said
}

// ErrArtifact is wrapped by the errors of [FileArtifact] and
// [Artifact.Check].
var ErrArtifact = errors.New("channel: bad artifact")

// FileArtifact returns the reference to the regular file at path: its
// absolute path, its size and its SHA-256, read from one open file (a
// symbolic link is followed: the file it names is the one sent).
func FileArtifact(path string) (Artifact, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Artifact{}, fmt.Errorf("%w: %s: %v", ErrArtifact, path, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return Artifact{}, fmt.Errorf("%w: %v", ErrArtifact, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Artifact{}, fmt.Errorf("%w: %v", ErrArtifact, err)
	}
	if !fi.Mode().IsRegular() {
		what := "a folder"
		if !fi.IsDir() {
			what = "a special file (" + fi.Mode().Type().String() + ")"
		}
		return Artifact{}, fmt.Errorf("%w: %s is %s, not a regular file", ErrArtifact, path, what)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Artifact{}, fmt.Errorf("%w: read %s: %v", ErrArtifact, path, err)
	}
	return Artifact{Path: abs, Size: &n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Check reports whether a is an artifact collab writes: an absolute
// path without control characters, a size not negative and a SHA-256 in
// lowercase hex.
func (a Artifact) Check() error {
	switch {
	case !filepath.IsAbs(a.Path) || filepath.Clean(a.Path) != a.Path:
		return fmt.Errorf("%w: path %q is not a clean absolute path", ErrArtifact, a.Path)
	case strings.ContainsFunc(a.Path, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%w: path %q has a control character", ErrArtifact, a.Path)
	case a.Size == nil || *a.Size < 0:
		return fmt.Errorf("%w: %s: no size", ErrArtifact, a.Path)
	case len(a.SHA256) != sha256.Size*2 || strings.ToLower(a.SHA256) != a.SHA256:
		return fmt.Errorf("%w: %s: sha256 %q is not 64 lowercase hex digits", ErrArtifact, a.Path, a.SHA256)
	}
	if _, err := hex.DecodeString(a.SHA256); err != nil {
		return fmt.Errorf("%w: %s: sha256 %q is not hex", ErrArtifact, a.Path, a.SHA256)
	}
	return nil
}

// SetArtifacts sets c's content.artifacts to arts (none: an empty list).
func (c *Content) SetArtifacts(arts []Artifact) error {
	c.Artifacts = nil
	for _, a := range arts {
		raw, err := json.Marshal(a)
		if err != nil {
			return err
		}
		c.Artifacts = append(c.Artifacts, raw)
	}
	return nil
}

// pathKeys are the members an artifact object of another writer may name
// its file with, in the order looked at.
var pathKeys = []string{"path", "file", "name", "url", "uri"}

// ArtifactList reads c's artifacts as any writer may have written them:
// an object with a path (or "file", "name", "url", "uri"), a "size" and a
// "sha256"; or a bare string, the path. A null is passed over; anything
// else is kept as its compact JSON in Path, so that it is still shown.
func (c Content) ArtifactList() []Artifact {
	var out []Artifact
	for _, raw := range c.Artifacts {
		if a, ok := readArtifact(raw); ok {
			out = append(out, a)
		}
	}
	return out
}

// readArtifact reads one artifact of ArtifactList; false for a null.
func readArtifact(raw json.RawMessage) (Artifact, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return Artifact{}, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return Artifact{Path: s}, true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		var a Artifact
		for _, k := range pathKeys {
			if json.Unmarshal(obj[k], &a.Path) == nil && a.Path != "" {
				break
			}
		}
		var n json.Number
		if json.Unmarshal(obj["size"], &n) == nil {
			if v, err := n.Int64(); err == nil && v >= 0 {
				a.Size = &v
			}
		}
		json.Unmarshal(obj["sha256"], &a.SHA256)
		if a.Path != "" {
			return a, true
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return Artifact{Path: string(raw)}, true
	}
	return Artifact{Path: b.String()}, true
}

// String shows a as a transcript line does: the path, then the size and
// the first 12 digits of the SHA-256 when known.
func (a Artifact) String() string {
	var extra []string
	if a.Size != nil {
		extra = append(extra, fmt.Sprintf("%d bytes", *a.Size))
	}
	if a.SHA256 != "" {
		extra = append(extra, "sha256 "+a.SHA256[:min(12, len(a.SHA256))])
	}
	if len(extra) == 0 {
		return a.Path
	}
	return a.Path + " (" + strings.Join(extra, ", ") + ")"
}
