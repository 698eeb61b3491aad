package modelcli_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

// envFake makes the test binary a fake command CLI: it writes
// $COLLAB_FAKE_LINES lines to standard error (the 3rd one 3000 bytes
// long), "answer" to standard output, and exits $COLLAB_FAKE_EXIT.
const envFake = "COLLAB_FAKE_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(envFake) != "" {
		n, _ := strconv.Atoi(os.Getenv("COLLAB_FAKE_LINES"))
		for i := 1; i <= n; i++ {
			line := fmt.Sprintf("line %d", i)
			if i == 3 {
				line = strings.Repeat("x", 3000)
			}
			fmt.Fprintln(os.Stderr, line)
		}
		fmt.Println("answer")
		code, _ := strconv.Atoi(os.Getenv("COLLAB_FAKE_EXIT"))
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestCommandEvents: a command run records started, each stderr line as
// progress (cut at 1 KiB, at most MaxCommandLines, then a count), and
// completed or error with the exit status and the stderr tail.
func TestCommandEvents(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		lines     int
		exit      int
		progress  int // progress events
		last      string
		lastText  string
		wantError bool
	}{
		{"ok", 4, 0, 4, modelcli.EventCompleted, "exit status 0", false},
		{"fails", 2, 3, 2, modelcli.EventError, "exit status 3\nline 1\nline 2", true},
		{"many lines", modelcli.MaxCommandLines + 7, 0, modelcli.MaxCommandLines + 1, modelcli.EventCompleted, "exit status 0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []modelcli.Event
			c := &modelcli.Command{Argv: []string{exe}}
			resp, err := c.Run(context.Background(), modelcli.Request{
				Env: []string{envFake + "=1", "COLLAB_FAKE_LINES=" + strconv.Itoa(tt.lines), "COLLAB_FAKE_EXIT=" + strconv.Itoa(tt.exit)},
				OnEvent: func(e modelcli.Event) {
					mu.Lock()
					seen = append(seen, e)
					mu.Unlock()
				},
			})
			if (err != nil) != tt.wantError {
				t.Fatalf("Run: err %v", err)
			}
			if len(seen) != len(resp.Events) {
				t.Errorf("OnEvent got %d events, Response.Events %d", len(seen), len(resp.Events))
			}
			evs := resp.Events
			if len(evs) < 2 || evs[0].Kind != modelcli.EventStarted {
				t.Fatalf("events %+v: want started first", evs)
			}
			if !strings.Contains(string(evs[0].Data), `"pid":`) {
				t.Errorf("started data %s: want the pid", evs[0].Data)
			}
			progress := 0
			for _, e := range evs {
				if e.Kind == modelcli.EventProgress {
					progress++
					if len(e.Text) > 1024 {
						t.Errorf("progress line of %d bytes: want at most 1 KiB", len(e.Text))
					}
				}
			}
			if progress != tt.progress {
				t.Errorf("progress events: got %d, want %d", progress, tt.progress)
			}
			last := evs[len(evs)-1]
			if last.Kind != tt.last || last.Text != tt.lastText {
				t.Errorf("last event %s %q: want %s %q", last.Kind, last.Text, tt.last, tt.lastText)
			}
			if tt.lines > modelcli.MaxCommandLines {
				if got, want := evs[len(evs)-2].Text, "… 7 more lines"; got != want {
					t.Errorf("count event %q: want %q", got, want)
				}
			}
			if tt.lines >= 2 && evs[1].Text != "line 1" {
				t.Errorf("first progress %q: want %q", evs[1].Text, "line 1")
			}
		})
	}
}

// TestCommandEventsEmpty: a command that prints nothing ends with an
// error event (ErrEmpty).
func TestCommandEventsEmpty(t *testing.T) {
	c := &modelcli.Command{Argv: []string{"true"}}
	resp, err := c.Run(context.Background(), modelcli.Request{})
	if !errors.Is(err, modelcli.ErrEmpty) {
		t.Fatalf("Run: err %v, want ErrEmpty", err)
	}
	if n := len(resp.Events); n != 2 || resp.Events[n-1].Kind != modelcli.EventError {
		t.Errorf("events %+v: want started, error", resp.Events)
	}
}
