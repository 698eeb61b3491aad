package live

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

// FuzzReadLine: readLine returns the lines of any input in order, each cut
// to the limit (and marked cut) when longer, without its line ending.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"type\":\"result\"}\n{\"a\":1}\r\n"), 8)
	f.Add([]byte(strings.Repeat("x", 100)+"\nshort"), 16)
	f.Add([]byte("\n\n"), 1)
	f.Fuzz(func(t *testing.T, in []byte, limit int) {
		if limit <= 0 || limit > 1<<16 {
			t.Skip()
		}
		r := bufio.NewReaderSize(bytes.NewReader(in), 16)
		var want [][]byte
		if len(in) > 0 {
			want = bytes.Split(bytes.TrimSuffix(in, []byte("\n")), []byte("\n"))
		}
		for i := 0; ; i++ {
			got, cut, err := readLine(r, limit)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if err == io.EOF && len(got) == 0 && !cut {
				// The end, or a last line that is empty once its "\r" goes.
				if i != len(want) && (i+1 != len(want) || len(bytes.TrimRight(want[i], "\r")) != 0) {
					t.Fatalf("%d lines, want %d", i, len(want))
				}
				return
			}
			if i >= len(want) {
				t.Fatalf("line %d %q beyond the %d of the input", i, got, len(want))
			}
			w := want[i]
			if len(w) >= limit {
				w = w[:limit]
				if !cut {
					t.Fatalf("line %d not marked cut", i)
				}
			}
			if w = bytes.TrimRight(w, "\r\n"); !bytes.Equal(got, w) {
				t.Fatalf("line %d: got %q, want %q", i, got, w)
			}
			if err == io.EOF {
				if i+1 != len(want) {
					t.Fatalf("ended at line %d of %d", i+1, len(want))
				}
				return
			}
		}
	})
}
