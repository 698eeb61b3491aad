package prompt

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"
)

// DefaultMemoryBytes is how much of a memory file LoadMemory reads when the
// caller gives no limit.
const DefaultMemoryBytes = 64 << 10

// Memory is one memory file as read for a prompt.
type Memory struct {
	Path      string // as given
	Text      string // the contents, or their first part if Truncated
	Size      int64  // the file's size in bytes
	Truncated bool   // Text is only the first part of the file
	Err       error  // why the file could not be read; then Text is ""
}

// errNotRegular is Memory.Err for a directory, FIFO, device or socket. It
// stands where an errno would ("no such file or directory"): a bare reason
// after the path the template prints, so it carries no package prefix.
var errNotRegular = errors.New("not a regular file")

// LoadMemory reads the files at paths, now: it is meant to be called for
// every prompt, so that each one sees the files' current contents. Each
// file gives one Memory, in order. Of each file at most maxBytes are kept
// (DefaultMemoryBytes if maxBytes <= 0), cut at a UTF-8 character boundary.
// A file that cannot be read (missing, unreadable, not a regular file) is
// never fatal: its Memory carries the reason in Err, so the prompt can say
// so. Relative paths are relative to the working directory.
func LoadMemory(paths []string, maxBytes int) []Memory {
	if len(paths) == 0 {
		return nil
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMemoryBytes
	}
	out := make([]Memory, len(paths))
	for i, p := range paths {
		out[i] = loadOne(p, maxBytes)
	}
	return out
}

func loadOne(path string, maxBytes int) Memory {
	m := Memory{Path: path}
	data, size, err := readCapped(path, maxBytes)
	if err != nil {
		// The template labels the entry with its path already: keep the
		// reason only ("no such file or directory"). errors.Is still works.
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err
		}
		m.Err = err
		return m
	}
	m.Size = size
	if len(data) > maxBytes {
		data = cutUTF8(data, maxBytes)
		m.Truncated = true
	}
	m.Text = string(data)
	return m
}

// readCapped reads up to maxBytes+1 bytes of a regular file (one more than
// kept, to notice a file that grew past the limit since Stat) and returns
// them with the file's size.
func readCapped(path string, maxBytes int) ([]byte, int64, error) {
	// Stat before opening: opening a FIFO would block until a writer came.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, errNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
	if err != nil {
		return nil, 0, err
	}
	return data, max(fi.Size(), int64(len(data))), nil
}

// cutUTF8 returns b cut to at most n bytes without splitting a UTF-8
// sequence at the end.
func cutUTF8[T string | []byte](b T, n int) T {
	if len(b) <= n {
		return b
	}
	b = b[:max(n, 0)]
	// Look back over at most UTFMax-1 bytes for the start of the last
	// character; drop it if it lost bytes.
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if c := b[len(b)-i]; utf8.RuneStart(c) {
			if !fullRune(b[len(b)-i:]) {
				b = b[:len(b)-i]
			}
			break
		}
	}
	return b
}

func fullRune[T string | []byte](s T) bool {
	return utf8.FullRuneInString(string(s))
}
