package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
)

// BenchmarkChannelPage100k measures opening a 100,000-message channel's
// page (its newest page, rendered) and one "Older messages" page: the
// issue asks for the last page in at most 200 ms (writeBigChannel is the
// fixture).
func BenchmarkChannelPage100k(b *testing.B) {
	root := tree.Root(b.TempDir())
	middle := writeBigChannel(b, root, "big", 100_000)
	srv, err := web.New(web.Config{Root: root, Person: "ann"})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, loopbackRequest("GET", srv.SignInPath()))
	cookies := rec.Result().Cookies()
	get := func(b *testing.B, path string) {
		req := loopbackRequest("GET", path)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", path, rec.Code)
		}
	}
	b.Run("newest", func(b *testing.B) {
		for b.Loop() {
			get(b, "/c/big")
		}
	})
	b.Run("older", func(b *testing.B) {
		for b.Loop() {
			get(b, "/c/big/older?before="+middle)
		}
	})
	// Another channel: the list counts big's unread names (one listing).
	b.Run("other", func(b *testing.B) {
		for b.Loop() {
			get(b, "/c/small")
		}
	})
}

// loopbackRequest is a request as http.Server hands it to the handler
// when it came to 127.0.0.1:8765 for that host (the Host check reads the
// local address from its context).
func loopbackRequest(method, target string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.Host = "127.0.0.1:8765"
	local := net.Addr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8765})
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
}

// writeBigChannel writes n small unsigned messages into channel ch of
// root, one a second from 2025-01-01, with plain os.WriteFile (no fsync),
// and returns the id of the middle one: the big-channel fixture of the
// page and load benchmarks.
func writeBigChannel(b *testing.B, root tree.Root, ch string, n int) (middle string) {
	b.Helper()
	dir := root.Channel(ch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		m := channel.Message{
			ID: channel.NewID("agent", at, fmt.Sprintf("%04x", uint16(i))), Timestamp: at.Format(channel.TimeFormat),
			SessionID: ch, From: "agent", To: "all", Type: "chat",
			Content: channel.Content{Text: fmt.Sprintf("message %d of the fixture", i)},
		}
		data, err := m.Encode()
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, m.ID+".json"), data, 0o644); err != nil {
			b.Fatal(err)
		}
		if i == n/2 {
			middle = m.ID
		}
	}
	return middle
}
