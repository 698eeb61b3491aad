package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// The TCP proxy of the partition scenarios, and the check of the remote senders' files.

// tcpProxy forwards connections to target while started.
type tcpProxy struct {
	target string
	addr   string // where it listens (kept across a restart)

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	total int
}

func (p *tcpProxy) start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	if p.conns == nil {
		p.conns = make(map[net.Conn]bool)
	}
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
	return nil
}

// forward copies c to a new connection to the target and back, until
// either side closes or the proxy stops.
func (p *tcpProxy) forward(c net.Conn) {
	t, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // stopped meanwhile
		p.mu.Unlock()
		c.Close()
		t.Close()
		return
	}
	p.conns[c], p.conns[t] = true, true
	p.total++
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, pair := range [][2]net.Conn{{c, t}, {t, c}} {
		wg.Go(func() {
			io.Copy(pair[0], pair[1])
			pair[0].Close()
			pair[1].Close()
		})
	}
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, t)
	p.mu.Unlock()
}

// cutOff stops the proxy once a connection is open (or after wait) and
// returns how many were.
func (p *tcpProxy) cutOff(wait time.Duration) int {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		p.mu.Lock()
		open := len(p.conns)
		p.mu.Unlock()
		if open > 0 {
			break
		}
	}
	return p.stop()
}

// stop closes the listener and every forwarded connection; it returns
// how many client connections were open.
func (p *tcpProxy) stop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	n := len(p.conns) / 2
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	return n
}

func (p *tcpProxy) accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

// remoteVerdict scores a remote scenario from the files on the mount.
func remoteVerdict(e *env) (verdict, error) {
	e.mu.Lock()
	r := e.remote
	e.mu.Unlock()
	if r == nil {
		return verdict{}, fmt.Errorf("no remote run to check")
	}
	msgs, _, err := channel.ReadAll(tree.Root(e.backing), chanName, channel.ReaderOptions{})
	if err != nil {
		return verdict{}, err
	}
	var sends []remoteSend
	agents := make(map[string]bool)
	for _, s := range r.senders {
		agents[s.agent] = true
		sends = append(sends, s.sends...)
		sends = append(sends, s.snapshot...)
	}
	v := remoteCheck(msgs, agents, sends)
	dir := tree.Root(e.backing).Channel(chanName)
	for _, m := range msgs {
		if !agents[m.From] {
			continue
		}
		at := m.Time()
		if fi, err := os.Lstat(filepath.Join(dir, m.ID+".json")); err == nil && fi.ModTime().After(at) {
			at = fi.ModTime() // written by a bridge after it was named
		}
		if at.After(v.Last) {
			v.Last = at
		}
		v.answers = append(v.answers, answerAt{m.Time(), at})
	}
	return v, nil
}

// remoteCheck scores what remote senders sent against the messages on the
// mount. Every send (each text was unique) must be on the mount exactly
// once, with its text: none is lost, more is duplicated. A send whose id
// the sender was told, or which its outbox held, must be on the mount
// under that id: else it is corrupt, as is a message from one of the
// senders (agents) whose text none of them sent.
func remoteCheck(msgs []channel.Message, agents map[string]bool, sends []remoteSend) verdict {
	byText := make(map[string][]string) // text -> ids on the mount
	for _, m := range msgs {
		if agents[m.From] {
			byText[m.Content.Text] = append(byText[m.Content.Text], m.ID)
		}
	}
	var v verdict
	detail := make(map[string]int)
	note := func(kind, format string, args ...any) {
		if detail[kind]++; detail[kind] <= 5 {
			v.Details = append(v.Details, kind+": "+fmt.Sprintf(format, args...))
		}
	}
	ids := make(map[string][]string) // text -> the ids senders were told or outboxes held
	var texts []string
	for _, s := range sends {
		if _, ok := ids[s.text]; !ok {
			texts = append(texts, s.text)
			ids[s.text] = nil
		}
		if s.id != "" {
			ids[s.text] = append(ids[s.text], s.id)
		}
	}
	v.Messages = len(texts)
	for _, text := range texts {
		on := byText[text]
		switch len(on) {
		case 0:
			v.Lost++
			note("lost", "%q (told or held as %v)", clip(text, 60), ids[text])
			continue
		case 1:
			v.OK++
		default:
			v.Duplicated++
			note("duplicated", "%q is on the mount as %s", clip(text, 60), strings.Join(on, ", "))
		}
		for _, id := range ids[text] {
			if !slices.Contains(on, id) {
				v.Corrupt++
				note("corrupt", "%q: %s was told or queued, the mount has %s", clip(text, 60), id, strings.Join(on, ", "))
			}
		}
	}
	for text, on := range byText {
		if _, ok := ids[text]; !ok {
			v.Corrupt += len(on)
			note("corrupt", "%s on the mount says %q, which no sender sent", strings.Join(on, ", "), clip(text, 60))
		}
	}
	for kind, n := range detail {
		if n > 5 {
			v.Details = append(v.Details, fmt.Sprintf("%s: … and %d more", kind, n-5))
		}
	}
	return v
}
