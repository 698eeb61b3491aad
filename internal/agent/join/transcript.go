package join

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// A CLI's transcript, a JSON-lines file it appends to (Claude Code's
// ~/.claude/projects/…/SESSION.jsonl, Gemini CLI's
// ~/.gemini/tmp/…/chats/session-….jsonl; the hooks name it), shows a read:
// a line that holds a message's id (the user's turn, or what was attached
// to a tool's result), and after it a line of the model's. Lines of the
// CLI's own queue (Claude's queue-operation) hold the text before the
// model has it, and do not count.

// transcript is one transcript file, read as it grows.
type transcript struct {
	path  string
	model []string        // the "type" of a model's line
	off   int64           // read up to here (whole lines)
	held  map[string]bool // ids in a line since the last model line
}

// maxTranscriptLine bounds a line read: a longer one is skipped.
const maxTranscriptLine = 8 << 20

// scan reads what was appended and returns the ids among want that are
// read.
func (t *transcript) scan(want map[string]bool) []string {
	if len(want) == 0 && len(t.held) == 0 {
		return nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var read []string
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// Too long to hold: skip to its end.
			n := int64(len(line))
			for err == bufio.ErrBufferFull && n < maxTranscriptLine {
				line, err = r.ReadSlice('\n')
				n += int64(len(line))
			}
			if err != nil {
				return read
			}
			t.off += n
			continue
		}
		if err != nil {
			return read // a partial line: read again when whole
		}
		t.off += int64(len(line))
		kind := lineType(line)
		switch {
		case slices.Contains(t.model, kind):
			for id := range t.held {
				read = append(read, id)
			}
			clear(t.held)
		case kind == "queue-operation":
		default:
			for id := range want {
				if bytes.Contains(line, []byte(id)) {
					if t.held == nil {
						t.held = make(map[string]bool)
					}
					t.held[id] = true
				}
			}
		}
	}
}

// lineType is a JSON line's "type".
func lineType(line []byte) string {
	var v struct {
		Type string `json:"type"`
	}
	json.Unmarshal(line, &v)
	return v.Type
}

// noteTranscript starts following the transcript at path (a hook named
// it), once.
func (s *Session) noteTranscript(path string, model []string) {
	if path == "" || !filepath.IsAbs(path) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.transcripts[path]; !ok {
		s.transcripts[path] = &transcript{path: path, model: model}
	}
}

// lookForReads marks read what the transcripts show read.
func (s *Session) lookForReads() {
	want := s.unread()
	s.mu.Lock()
	ts := make([]*transcript, 0, len(s.transcripts))
	for _, t := range s.transcripts {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	for _, t := range ts {
		for _, id := range t.scan(want) {
			s.markRead(id)
		}
	}
}
