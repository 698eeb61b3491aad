package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// post writes a message named at t into channel c.
func post(t *testing.T, root, c, from, to, text string, at time.Time) channel.Message {
	t.Helper()
	w := &channel.Writer{Root: tree.Root(root), Now: func() time.Time { return at }}
	m := &channel.Message{SessionID: c, From: from, To: to, Content: channel.Content{Text: text}}
	if err := w.Post(m); err != nil {
		t.Fatal(err)
	}
	return *m
}

func TestReadTranscript(t *testing.T) {
	root := newTree(t)
	base := time.Date(2026, 1, 11, 16, 33, 0, 0, time.UTC)
	// Written out of order: the transcript is in name order.
	m2 := post(t, root, "c", "codex", "claude", "second", base.Add(time.Minute))
	m1 := post(t, root, "c", "claude", "codex", "first\nline two \x1b[31mred", base)
	m3 := post(t, root, "c", "gemini", "all", "third", base.Add(2*time.Minute))
	os.WriteFile(filepath.Join(root, "channels", "c", "notes.txt"), []byte("x"), 0o666)
	env := map[string]string{"COLLAB_ROOT": root}

	r := runCollab(t, env, "", "read", "--channel", "c")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := "2026-01-11 16:33:00  claude (unsigned) → codex  " + m1.ID + "\n  first\n  line two \\x1b[31mred\n\n" +
		"2026-01-11 16:34:00  codex (unsigned) → claude  " + m2.ID + "\n  second\n\n" +
		"2026-01-11 16:35:00  gemini (unsigned) → all  " + m3.ID + "\n  third\n\n"
	if r.stdout != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "skipped notes.txt: not a message name") {
		t.Errorf("stderr %q does not report the foreign file", r.stderr)
	}

	tests := []struct {
		name string
		args []string
		want []string // ids, in order
	}{
		{"limit", []string{"--limit", "2"}, []string{m2.ID, m3.ID}},
		{"since id", []string{"--since", m1.ID}, []string{m2.ID, m3.ID}},
		{"since absent id", []string{"--since", channel.NewID("x", base.Add(90*time.Second), "0000")}, []string{m3.ID}},
		{"since duration", []string{"--since", "876000h"}, []string{m1.ID, m2.ID, m3.ID}},
		{"since short duration", []string{"--since", "1s"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCollab(t, env, "", append([]string{"read", "-s", "c", "--json"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if line == "" {
					continue
				}
				m, err := channel.Decode([]byte(line), "", "c")
				if err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				got = append(got, m.ID)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("ids = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReadBadInput(t *testing.T) {
	root := newTree(t)
	for _, args := range [][]string{
		{"read"},
		{"read", "--channel", "../etc"},
		{"read", "--channel", "c", "--since", "yesterday"},
		{"read", "--channel", "c", "--limit", "-1"},
		{"read", "--channel", "c", "extra"},
	} {
		r := runCollab(t, map[string]string{"COLLAB_ROOT": root}, "", args...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, r.code, r.stderr)
		}
	}
	if files := filesUnder(t, root); len(files) > 0 {
		t.Errorf("created %v", files)
	}
}

func TestReadFollow(t *testing.T) {
	root := newTree(t)
	post(t, root, "c", "a", "b", "before", time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"read", "--channel", "c", "--follow", "--poll", "10ms"},
			func(k string) string { return map[string]string{"COLLAB_ROOT": root}[k] }, strings.NewReader(""), &out, &out)
	}()
	waitFor(t, func() bool { return strings.Contains(out.String(), "before") })
	post(t, root, "c", "b", "a", "after", time.Now().Add(-time.Minute)) // a slow clock is still followed
	waitFor(t, func() bool { return strings.Contains(out.String(), "after") })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("follow returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not stop when cancelled")
	}
	if n := strings.Count(out.String(), "before"); n != 1 {
		t.Errorf("the first message was printed %d times", n)
	}
}

// waitFor polls cond until it holds. The deadline is a hang guard, not a
// latency assertion: CI machines under -race can be many times slower.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	const limit = 90 * time.Second
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReadLimitReadsTheTail: read --limit N reads the newest files only:
// older files, even bad ones, are not looked at (and so not reported),
// and with --follow the tail is printed once before what arrives.
func TestReadLimitReadsTheTail(t *testing.T) {
	root := t.TempDir()
	base := time.Date(2026, 1, 11, 16, 33, 0, 0, time.UTC)
	post(t, root, "c", "a", "all", "old", base)
	dir := filepath.Join(root, "channels", "c")
	big := filepath.Join(dir, channel.NewID("a", base.Add(time.Second), "0000")+".json")
	if err := os.WriteFile(big, make([]byte, channel.MaxMessageSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, channel.NewID("a", base.Add(2*time.Second), "0000")+".json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := post(t, root, "c", "b", "all", "newest", base.Add(time.Minute))
	env := map[string]string{"COLLAB_ROOT": root}
	r := runCollab(t, env, "", "read", "--channel", "c", "--limit", "1")
	if r.code != 0 || !strings.Contains(r.stdout, m.ID) || strings.Contains(r.stdout, "old") {
		t.Errorf("read --limit 1: exit %d, stdout %q", r.code, r.stdout)
	}
	if r.stderr != "" {
		t.Errorf("read --limit 1 looked at older files: %q", r.stderr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"read", "--channel", "c", "--limit", "1", "--follow", "--poll", "10ms"},
			func(k string) string { return env[k] }, strings.NewReader(""), &out, &out)
	}()
	waitFor(t, func() bool { return strings.Contains(out.String(), "newest") })
	post(t, root, "c", "b", "a", "after", time.Now())
	waitFor(t, func() bool { return strings.Contains(out.String(), "after") })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("follow returned %v", err)
	}
	if n := strings.Count(out.String(), "newest"); n != 1 || strings.Contains(out.String(), "old") {
		t.Errorf("follow with --limit 1 printed:\n%s", out.String())
	}
}

// A channel that does not exist is an error (exit 3) naming the channels
// that do, not an empty transcript.
func TestReadNoSuchChannel(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root}
	r := runCollab(t, env, "", "read", "--channel", "nosuch")
	if r.code != exitNothing || !strings.Contains(r.stderr, `no channel "nosuch"`) || !strings.Contains(r.stderr, "no channel yet") {
		t.Errorf("empty tree: exit %d, stderr %q; want 3 and no channel yet", r.code, r.stderr)
	}
	post(t, root, "general", "bob", "all", "hi", time.Now())
	post(t, root, "ops", "bob", "all", "hi", time.Now())
	for _, args := range [][]string{{"read", "--channel", "nosuch"}, {"read", "--channel", "nosuch", "--json", "-n", "1"}} {
		r = runCollab(t, env, "", args...)
		if r.code != exitNothing || r.stdout != "" || !strings.Contains(r.stderr, "(the channels: general, ops)") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 3 naming general and ops", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := runCollab(t, env, "", "read", "--channel", "general"); r.code != 0 || !strings.Contains(r.stdout, "hi") {
		t.Errorf("general: exit %d, %q", r.code, r.stdout)
	}
}
