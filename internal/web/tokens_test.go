package web

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestTokens(t *testing.T) {
	toks := Tokens{Path: filepath.Join(t.TempDir(), "cfg", "serve-tokens.json")}
	if p := toks.Lookup("collab_nothing"); p != "" {
		t.Errorf("lookup in no file: %q", p)
	}
	secret, rec, err := toks.New("bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := toks.New("no body"); err == nil {
		t.Error("a token for a bad name")
	}
	data, err := os.ReadFile(toks.Path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret[len(tokenPrefix):]) {
		t.Errorf("the file holds the token: %s", data)
	}
	if fi, _ := os.Stat(toks.Path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if p := toks.Lookup(secret); p != "bob" {
		t.Errorf("lookup: %q", p)
	}
	for _, bad := range []string{"", rec.SHA256, tokenPrefix + rec.SHA256, secret + "0"} {
		if p := toks.Lookup(bad); p != "" {
			t.Errorf("lookup %q: %q", bad, p)
		}
	}
	if err := toks.Remove("t-nope"); !errors.Is(err, ErrNoToken) {
		t.Errorf("remove unknown: %v", err)
	}
	if err := toks.Remove(rec.ID); err != nil {
		t.Fatal(err)
	}
	if p := toks.Lookup(secret); p != "" {
		t.Errorf("a revoked token works: %q", p)
	}
}

// TestTokenPostsAsItsPerson: a token signs in as its person, who posts as
// themself; a revoked token gets 401.
func TestTokenPostsAsItsPerson(t *testing.T) {
	root := tree.Root(t.TempDir())
	toks := Tokens{Path: filepath.Join(t.TempDir(), "serve-tokens.json")}
	secret, rec, err := toks.New("bob")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Root: root, Person: "alice", Tokens: toks})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	send := func() *http.Response {
		req, _ := http.NewRequest("POST", ts.URL+"/api/channels/dev/messages", strings.NewReader(`{"text":"hi"}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := send(); resp.StatusCode != http.StatusCreated {
		t.Fatalf("post with a token: %s", resp.Status)
	}
	msgs, err := channel.Recent(root, "dev", "", 5)
	if err != nil || len(msgs) != 1 || msgs[0].From != "bob" {
		t.Errorf("posted %+v %v", msgs, err)
	}
	if err := toks.Remove(rec.ID); err != nil {
		t.Fatal(err)
	}
	if resp := send(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("post with a revoked token: %s", resp.Status)
	}
}

// TestAgentTokens: an agent's token is found with its agent and channel,
// names no person (Lookup), and a file from before kinds reads as
// persons' tokens.
func TestAgentTokens(t *testing.T) {
	toks := Tokens{Path: filepath.Join(t.TempDir(), "serve-tokens.json")}
	secret, rec, err := toks.NewAgent("claude", "dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]string{{"no body", ""}, {"claude", "../x"}, {"", "dev"}} {
		if _, _, err := toks.NewAgent(bad[0], bad[1]); err == nil {
			t.Errorf("an agent token for %q on %q", bad[0], bad[1])
		}
	}
	if p := toks.Lookup(secret); p != "" {
		t.Errorf("an agent's token signs in as person %q", p)
	}
	got, ok := toks.Find(secret)
	if !ok || !got.IsAgent() || got.Agent != "claude" || got.Channel != "dev" || got.Name() != "claude" || got.KindName() != KindAgent || got.ID != rec.ID {
		t.Errorf("find: %+v %v", got, ok)
	}
	// A file written before kinds: its records are persons'.
	hash := hashToken(tokenPrefix + "old")
	old := `[{"id":"t-` + hash[:12] + `","person":"bob","sha256":"` + hash + `","created":"2026-01-01T00:00:00Z"}]`
	if err := os.WriteFile(toks.Path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if p := toks.Lookup(tokenPrefix + "old"); p != "bob" {
		t.Errorf("an old person token: %q", p)
	}
	if r, ok := toks.Find(tokenPrefix + "old"); !ok || r.IsAgent() || r.KindName() != KindPerson {
		t.Errorf("an old record: %+v", r)
	}
	if _, _, err := toks.New("carol"); err != nil {
		t.Fatal(err)
	}
	if recs, err := toks.List(); err != nil || len(recs) != 2 || recs[1].Kind != KindPerson {
		t.Errorf("after adding: %+v %v", recs, err)
	}
}
