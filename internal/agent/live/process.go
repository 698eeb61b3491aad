package live

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// process is what every session keeps of its CLI process: its input, its
// end, the tail of its standard error, and the graces of the way it is
// stopped. A session embeds it and sets inLock to the lock its writes to
// in take (its own wmu, or its connection's).
type process struct {
	pid                 int
	killGrace, intGrace time.Duration

	in     io.WriteCloser
	wmu    sync.Mutex  // writes to in, for a session that writes itself
	inLock sync.Locker // the lock writes to in take
	done   chan struct{}
	stderr tailBuffer
	err    error // how the process ended, once done is closed

	closeMu sync.Mutex
	closed  bool
}

// newProcess is a process stopped with those graces (zero: the defaults).
func newProcess(killGrace, intGrace time.Duration) process {
	return process{killGrace: cmp.Or(killGrace, DefaultKillGrace), intGrace: cmp.Or(intGrace, DefaultInterruptGrace),
		done: make(chan struct{})}
}

// beginTurn is what every session's Turn does first: ctx bounded by
// req.Timeout (its cause proc.ErrTimeout), and req.OnStart told the pid.
// The caller calls cancel when the turn ends.
func (p *process) beginTurn(ctx context.Context, req *modelcli.Request) (_ context.Context, cancel context.CancelFunc) {
	cancel = func() {}
	if req.Timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, req.Timeout, fmt.Errorf("%w after %v", proc.ErrTimeout, req.Timeout))
	}
	if req.OnStart != nil {
		req.OnStart(p.pid)
	}
	return ctx, cancel
}

// emitter passes events to req.OnEvent, if set.
func emitter(req *modelcli.Request) func([]modelcli.Event) {
	return func(evs []modelcli.Event) {
		if req.OnEvent == nil {
			return
		}
		for _, e := range evs {
			req.OnEvent(e)
		}
	}
}

// start starts cmd with its input piped to p.in and its standard error's
// tail kept, and returns its standard output.
func (p *process) start(cmd *exec.Cmd) (io.ReadCloser, error) {
	cmd.WaitDelay = p.killGrace
	cmd.Stderr = &p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.in, p.pid = in, cmd.Process.Pid
	return out, nil
}

// awaitInterrupt follows an interrupt the session asked for through its
// protocol (err: how asking went): it waits for the turn to end (ending)
// or the process, until ctx is done; then, or when asking failed, it
// ends the process group.
func (p *process) awaitInterrupt(ctx context.Context, ending <-chan struct{}, err error) error {
	if err == nil {
		select {
		case <-ending:
			return nil
		case <-p.done:
			return nil
		case <-ctx.Done():
		}
	}
	_, kerr := proc.EndGroup(p.pid, p.killGrace)
	return cmp.Or(kerr, err)
}

// interruptFor runs a session's Interrupt with a deadline d from now.
func interruptFor(d time.Duration, interrupt func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	interrupt(ctx)
}

// close is a session's Close: it ends the process's input, lets drain
// (if any) read what output is left, and ends the process group when the
// process is still there a grace later. A second close waits for the
// end.
func (p *process) close(drain func()) error {
	p.closeMu.Lock()
	if p.closed {
		p.closeMu.Unlock()
		<-p.done
		return nil
	}
	p.closed = true
	p.closeMu.Unlock()
	lock := p.inLock
	if lock == nil {
		lock = &p.wmu
	}
	lock.Lock()
	p.in.Close()
	lock.Unlock()
	if drain != nil {
		go drain() // so the reader reaches the end
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(p.killGrace):
	}
	_, err := proc.EndGroup(p.pid, p.killGrace)
	<-p.done
	return err
}

// tailBuffer keeps the last maxStderr bytes written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - maxStderr; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b...)
}
