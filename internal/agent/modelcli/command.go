package modelcli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/collabdev/collab/internal/plumbing/proc"
)

// MaxCommandLines is how many lines of a command's standard error become
// progress events; the rest are counted in one last progress event.
const MaxCommandLines = 200

// maxTail is how much of the end of standard error an error event keeps.
const maxTail = 2000

// commandEvents makes the events of a [Command] run: started, each line of
// standard error as progress (cut to [proc.MaxStderrLine] bytes, at most
// [MaxCommandLines] of them, then one "… N more lines"), and completed or
// error with the exit status and the tail of standard error. Its methods
// are called from proc's goroutines.
type commandEvents struct {
	onEvent func(Event)
	now     func() time.Time

	mu      sync.Mutex
	events  []Event
	started bool
	lines   int // stderr lines seen
}

func (c *commandEvents) add(e Event) {
	e.Time = c.now().UTC()
	c.events = append(c.events, e)
	if c.onEvent != nil {
		c.onEvent(e)
	}
}

// start records that the program started; pid 0 when it is not known.
func (c *commandEvents) start(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startLocked(pid)
}

func (c *commandEvents) startLocked(pid int) {
	if c.started {
		return
	}
	c.started = true
	var data []byte
	if pid > 0 {
		data = []byte(`{"pid":` + strconv.Itoa(pid) + `}`)
	}
	c.add(Event{Kind: EventStarted, Data: data})
}

// line records one line of standard error.
func (c *commandEvents) line(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startLocked(0) // a line can race the Started callback
	c.lines++
	if c.lines <= MaxCommandLines {
		c.add(Event{Kind: EventProgress, Text: string(b)})
	}
}

// finish records how the run ended and returns every event.
func (c *commandEvents) finish(res proc.Result, err error) []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	if more := c.lines - MaxCommandLines; more > 0 {
		c.add(Event{Kind: EventProgress, Text: fmt.Sprintf("… %d more lines", more)})
	}
	stderr := strings.TrimSpace(strings.ToValidUTF8(string(res.StderrTail), "\uFFFD"))
	if len(stderr) > maxTail {
		cut := len(stderr) - maxTail
		for cut < len(stderr) && !utf8.RuneStart(stderr[cut]) {
			cut++
		}
		stderr = "…" + stderr[cut:]
	}
	switch {
	case err == nil:
		c.add(Event{Kind: EventCompleted, Text: "exit status 0"})
	default:
		text := err.Error()
		var ee *proc.ExitError
		if errors.As(err, &ee) && ee.Signal == 0 && !ee.TimedOut && ee.Cause == nil {
			text = "exit status " + strconv.Itoa(ee.Code)
		}
		if stderr != "" {
			text += "\n" + stderr
		}
		c.add(Event{Kind: EventError, Text: text})
	}
	return c.events
}
