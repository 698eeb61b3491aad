package fakemodel

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"testing"
	"fmt"
)

// TEMPORARY exploration aid.
func TestExploreServe(t *testing.T) {
	addr := os.Getenv("FAKEMODEL_SERVE")
	if addr == "" {
		t.Skip()
	}
	s := &Server{done: make(chan struct{}), arrived: make(chan struct{})}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	mode := os.Getenv("FAKEMODEL_MODE")
	s.Script(func(r Request) Reply {
		b, _ := json.Marshal(map[string]any{"seq": r.Seq, "path": r.Path, "model": r.Model, "prompt": r.Prompt(), "tools": len(r.Tools), "transcript": r.Transcript()})
		fmt.Fprintln(os.Stderr, string(b))
		switch {
		case strings.HasPrefix(mode, "shell:"):
			if _, ok := r.ToolResult(); !ok {
				return Shell(mode[6:])
			}
		case strings.HasPrefix(mode, "read:"):
			if _, ok := r.ToolResult(); !ok {
				return ReadFile(mode[5:])
			}
		case strings.HasPrefix(mode, "err:"):
			var st int
			fmt.Sscan(mode[4:], &st)
			return Error(st, "fake failure")
		}
		return Echo(r)
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(os.Stderr, "HTTP", r.Method, r.URL)
		s.serve(w, r)
	})
	go http.Serve(ln, h)
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	<-c
}
