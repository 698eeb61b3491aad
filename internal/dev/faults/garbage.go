package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Scenario 12: garbage in the channel.

// garbageFile is one foreign file dropped into the channel.
type garbageFile struct {
	name    string
	report  int // how often the watcher must report it: 1, 0, or -1 for at most once
	make    func(path string) error
	message bool // a valid message for the agent: answered at most once
}

// garbage drops foreign and broken files into the channel between good
// messages: each is reported at most once (once for those that must be),
// none is fatal, and every good message is answered once. The watcher's
// memory is sampled from /proc/PID/status every 20 ms throughout; its peak
// (VmHWM) must stay under garbageMemBound.
// garbageMemBound bounds the watcher's peak resident memory (VmHWM) in
// scenario 12. It is below the size of the 50 MB garbage file, so a watcher
// that reads that file whole cannot pass, and well over twice the peak
// measured with the fixed seed (19-19.5 MB in three runs, 2026-11-24), so
// a change of Go runtime or GC pacing does not trip it.
const garbageMemBound = 45 << 20

func garbage(ctx context.Context, e *env) error {
	good := e.size(20, 10)
	w, err := e.startWatcher(ctx, watchOpts{root: e.backing}, true)
	if err != nil {
		return err
	}
	mem := sampleMemory(w.pid(), 20*time.Millisecond)
	defer func() {
		mem.end()
		mb := func(n int64) float64 { return float64(n) / (1 << 20) }
		e.note("watcher memory: peak resident %.1f MB (VmHWM), highest VmRSS sampled %.1f MB (%d samples, every 20 ms); bound %d MB",
			mb(mem.hwm), mb(mem.maxRSS), mem.samples, garbageMemBound>>20)
		if mem.hwm > garbageMemBound {
			e.problem("the watcher's peak resident memory %.1f MB is above the bound of %d MB", mb(mem.hwm), garbageMemBound>>20)
		}
	}()
	dir := tree.Root(e.backing).Channel(chanName)
	files := garbageFiles(e)
	e.mu.Lock()
	e.garbage = files
	e.mu.Unlock()
	slow := make(chan error, 1)
	for i := range good {
		if _, err := e.send(ctx, e.backing, sender, fmt.Sprintf("s12 good %d of %d", i+1, good)); err != nil {
			return err
		}
		for j := i; j < len(files); j += good {
			// Made under a dot name, then renamed in: each appears whole
			// (the in-place writer is slowWriter).
			g := files[j]
			tmp := filepath.Join(dir, fmt.Sprintf(".garbage-%d", j))
			if err := g.make(tmp); err != nil {
				return fmt.Errorf("make %q: %w", g.name, err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, g.name)); err != nil {
				return fmt.Errorf("make %q: %w", g.name, err)
			}
		}
		if i == 1 {
			go func() { slow <- slowWriter(ctx, e, dir) }()
		}
		if err := sleep(ctx, between(e.rng, 50*time.Millisecond, 300*time.Millisecond)); err != nil {
			return err
		}
	}
	if err := <-slow; err != nil {
		return err
	}
	return e.await(ctx, 30*time.Second, 2*time.Second)
}

// slowWriter writes a message for the agent in place, in two halves a
// second apart, as a foreign writer that ignores the protocol might: the
// half-written file must be retried, not dropped, and answered once.
func slowWriter(ctx context.Context, e *env, dir string) error {
	now := time.Now().UTC()
	id := channel.NewID("mallory", now, "5104")
	text := "s12 written in place, slowly"
	data, err := json.Marshal(map[string]any{"id": id, "timestamp": now.Format(channel.TimeFormat), "from": "mallory",
		"to": agent, "session_id": chanName, "type": "chat", "content": map[string]any{"text": text}})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, id+".json"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data[:len(data)/2]); err != nil {
		return err
	}
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	if _, err := f.Write(data[len(data)/2:]); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	e.acks.add(ack{ID: id, Text: text, At: time.Now()})
	return nil
}

func garbageFiles(e *env) []garbageFile {
	now := time.Now().UTC()
	name := func(i int) string { return channel.NewID("mallory", now, fmt.Sprintf("%04x", 0xa000+i)) + ".json" }
	write := func(data []byte) func(string) error {
		return func(p string) error { return os.WriteFile(p, data, 0o666) }
	}
	msg := func(text string) []byte {
		return []byte(`{"from":"mallory","to":"` + agent + `","content":{"text":"` + text + `"}}`)
	}
	nested := func(depth int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"from":"mallory","to":"` + agent + `","content":{"text":"deep","x":`)
		b.WriteString(strings.Repeat("[", depth))
		b.WriteString(strings.Repeat("]", depth))
		b.WriteString(`}}`)
		return b.Bytes()
	}
	huge := func(p string) error {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		w.WriteString(`{"from":"mallory","to":"` + agent + `","content":{"text":"`)
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 50 {
			w.Write(chunk)
		}
		w.WriteString(`"}}`)
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return []garbageFile{
		{name: name(0), report: 1, make: write(nil)},
		{name: name(1), report: 1, make: write([]byte("this is not JSON at all\n"))},
		{name: name(2), report: 1, make: huge},
		{name: name(3), report: 1, make: write(nested(100_000))},
		{name: name(4), message: true, make: write(nested(5_000))},
		{name: name(5), message: true, make: write(msg("invalid UTF-8: \xff\xfe\xc3\x28 here"))},
		{name: name(6), report: 1, make: write([]byte("\xff\xfe\x00{not utf-8 or JSON"))},
		{name: name(7), report: 1, make: write([]byte(`[1,2,3]`))},
		{name: name(8), report: 1, make: write([]byte(`null`))},
		{name: name(9), report: 1, make: write([]byte(`{"from":123,"content":{"text":"wrong types"}}`))},
		{name: name(10), report: 1, make: write([]byte(`{"from":"mallory","to":"bot","content":{"text":"truncated`))},
		{name: name(11), report: 1, make: func(p string) error { return os.Mkdir(p, 0o777) }},
		{name: name(12), report: 1, make: func(p string) error { return os.Symlink("/etc/passwd", p) }},
		{name: name(13), report: 1, make: func(p string) error { return syscall.Mkfifo(p, 0o666) }},
		{name: "msg-20991231-235959-mallory-beef.json", make: write([]byte(`{"from":"mallory","to":"all","content":{"text":"from the far future"}}`))},
		{name: "msg-19700101-000000-mallory-0bad.json", report: -1, make: write([]byte(`{"from":"mallory","to":"all","content":{"text":"from 1970"}}`))},
		{name: "msg-20260101-000000-bot-zzzz.json", report: 1, make: write(msg("bad hex"))},
		{name: "msg with spaces.json", report: 1, make: write(msg("spaces"))},
		{name: "msg-\n-newline.json", report: 1, make: write(msg("newline"))},
		{name: "\xff\xfe-not-utf8.json", report: 1, make: write(msg("bad name"))},
		{name: strings.Repeat("m", 250) + ".json", report: 1, make: write(msg("long name"))},
		{name: "notes.txt", report: 1, make: write([]byte("hello"))},
		{name: ".hidden.json", make: write(msg("hidden"))},
		{name: name(14) + ".tmp", make: write(msg("tmp"))},
		{name: "." + name(15), make: write(msg("dot temp"))},
	}
}

// asLogged is s as slog's JSON handler writes it: each byte of invalid
// UTF-8 becomes U+FFFD.
func asLogged(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		b.WriteRune(r) // utf8.RuneError for an invalid byte
		s = s[n:]
	}
	return b.String()
}

// garbageLogged checks the watcher's JSON log: each garbage file that must
// be reported is reported exactly once, the others never, and none more
// than once.
func garbageLogged(e *env) {
	count := make(map[string]int)
	reasons := make(map[string]string)
	err := logLines(e, func(l logLine) {
		if l.Msg == "skipped file" {
			count[l.File]++
			reasons[l.File] = l.Reason
		}
		if l.Level == "ERROR" {
			e.note("error logged: %s", clip(string(l.raw), 200))
		}
	})
	if err != nil {
		e.problem("watcher log: %v", err)
		return
	}
	for _, g := range e.garbage {
		key := asLogged(g.name)
		c := count[key]
		switch {
		case c > 1:
			e.problem("%q reported %d times", g.name, c)
		case g.report == 1 && c == 0:
			e.problem("%q never reported", g.name)
		case g.report == 0 && c > 0:
			e.problem("%q reported (%s), should be ignored silently", g.name, reasons[key])
		}
	}
	logged := 0
	for _, g := range e.garbage {
		if count[asLogged(g.name)] == 1 {
			logged++
		}
	}
	e.note("%d garbage files, %d reported once in the log", len(e.garbage), logged)
	// The valid message with invalid UTF-8 may be answered, but once.
	s := newScanner(tree.Root(e.backing).Channel(chanName), chanName, agent)
	if err := s.scan(); err == nil {
		for _, g := range e.garbage {
			if !g.message {
				continue
			}
			id := strings.TrimSuffix(g.name, ".json")
			if n := len(s.replies[id]); n > 1 {
				e.problem("%s answered %d times", id, n)
			} else {
				e.note("%s (invalid UTF-8 text) answered %d time(s)", id, n)
			}
		}
	}
}
