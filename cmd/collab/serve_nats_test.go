package main

import (
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
)

// TestServePostPublishes: with NATS configured, what the dashboard posts
// is announced on the stream as collab send's posts are (nats parity
// finds it in both).
func TestServePostPublishes(t *testing.T) {
	url := natsServer(t)
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "NATS_URL": url}
	if r := runCollab(t, env, "", "nats", "init"); r.code != 0 {
		t.Fatalf("nats init: %+v", r)
	}
	signin := serveForTest(t, env, "--person", "alice")
	base := signin[:strings.Index(signin, "/signin")]
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(signin)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %v %v", resp, err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("POST", base+"/api/channels/c/messages", strings.NewReader(`{"text":"from the page"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", base)
	resp, err = c.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("post: %v %v", resp, err)
	}
	resp.Body.Close()
	if r := runCollab(t, env, "", "nats", "parity", "--channel", "c"); r.code != 0 || !strings.Contains(r.stdout, "1 files, 1 in the stream") {
		t.Errorf("parity after a page post: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}
