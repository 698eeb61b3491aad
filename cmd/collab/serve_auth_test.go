package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestServeHostAndExpiryFlags: --host adds a name the server answers to
// (any other gets 421); --signin-ttl bounds the printed URL; the
// lifetimes must be positive.
func TestServeHostAndExpiryFlags(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root}
	url := serveForTest(t, env, "--person", "alice", "--host", "dash.example", "--signin-ttl", "1ns")
	base := url[:strings.Index(url, "/signin")]
	port := base[strings.LastIndex(base, ":")+1:]
	for host, want := range map[string]int{
		"dash.example:" + port: http.StatusUnauthorized, // answered: not signed in
		"evil.example:" + port: http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest("GET", base+"/api/session", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s, want %d", host, resp.Status, want)
		}
	}
	// The requests above took longer than the URL's 1ns.
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("an expired sign-in URL: %s %v", resp.Status, resp.Cookies())
	}
	for _, flag := range []string{"--signin-ttl", "--session-idle", "--session-max"} {
		if r := runCollab(t, env, "", "serve", "--person", "alice", "--listen", "127.0.0.1:0", flag, "0s"); r.code != exitUsage {
			t.Errorf("%s 0s: exit %d, want %d", flag, r.code, exitUsage)
		}
	}
}
