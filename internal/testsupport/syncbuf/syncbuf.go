// Package syncbuf is a bytes.Buffer that a writer goroutine and a reader
// goroutine can share: what tests give a process's stderr or a logger,
// and read while it runs.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for one writer and readers at once. The zero value is
// an empty buffer ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
