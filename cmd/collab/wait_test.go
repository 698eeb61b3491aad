package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// requestIn waits until a message from agent appears in channel c and
// returns it.
func requestIn(t *testing.T, root, c, agent string) channel.Message {
	t.Helper()
	var got channel.Message
	waitFor(t, func() bool {
		msgs, _, _ := channel.ReadAll(tree.Root(root), c, channel.ReaderOptions{})
		for _, m := range msgs {
			if m.From == agent {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// sendWait runs `collab send … --wait` in the background; its result
// arrives on the channel returned.
func sendWait(t *testing.T, env map[string]string, args ...string) <-chan result {
	t.Helper()
	out := make(chan result, 1)
	go func() {
		out <- runCollab(t, env, "", append([]string{"send", "--wait"}, args...)...)
	}()
	return out
}

// registered gives agent a registry entry: send --wait ends at once, as
// undeliverable, on a message to an agent the tree does not know.
func registered(t *testing.T, root, agent string) {
	t.Helper()
	dir := tree.Root(root).Registry()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, agent+".json"), []byte(`{"id":"`+agent+`"}`), 0o666); err != nil {
		t.Fatal(err)
	}
}

func TestSendWaitPrintsTheReply(t *testing.T) {
	root := newTree(t)
	registered(t, root, "codex") // answered by hand below
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
	done := sendWait(t, env, "--agent", "lead", "--to", "codex", "--poll", "10ms", "--timeout", "60s", "review t1 please")
	req := requestIn(t, root, "dev", "lead")
	if string(req.Metadata.Extra["await_reply"]) != "true" {
		t.Errorf("request metadata = %+v; want await_reply true", req.Metadata)
	}
	// The asker's own follow-up does not count as the reply.
	runCollab(t, env, "", "send", "--agent", "lead", "--in-reply-to", req.ID, "also t2")
	if r := runCollab(t, env, "", "send", "--agent", "codex", "--in-reply-to", req.ID, "--text", "LGTM\nship it"); r.code != 0 {
		t.Fatalf("reply: %+v", r)
	}
	r := <-done
	if r.code != 0 || r.stdout != "LGTM\nship it\n" || !strings.Contains(r.stderr, "sent "+req.ID) {
		t.Errorf("send --wait: exit %d, stdout %q, stderr %q; want the reply's text", r.code, r.stdout, r.stderr)
	}
}

func TestSendWaitTimesOut(t *testing.T) {
	env := map[string]string{"COLLAB_ROOT": newTree(t), "COLLAB_CHANNEL": "dev"}
	r := runCollab(t, env, "", "send", "--wait", "--agent", "lead", "--timeout", "50ms", "--poll", "10ms", "anyone?")
	if r.code != 3 || !strings.Contains(r.stderr, "no reply to msg-") || !strings.Contains(r.stderr, "collab wait --channel dev --reply-to msg-") {
		t.Errorf("send --wait without a reply: exit %d, stderr %q; want exit 3 and a hint", r.code, r.stderr)
	}
	if r := runCollab(t, env, "", "send", "--agent", "lead", "--timeout", "5s", "x"); r.code != 2 {
		t.Errorf("--timeout without --wait: exit %d, want 2", r.code)
	}
}

func TestWaitCommand(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
	id := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "lead", "--to", "codex", "go").stdout)
	runCollab(t, env, "", "send", "--agent", "gemini", "--in-reply-to", id, "from gemini")

	r := runCollab(t, env, "", "wait", "--reply-to", id)
	if r.code != 0 || r.stdout != "from gemini\n" {
		t.Errorf("wait: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "wait", "--reply-to", id, "--from", "codex", "--timeout", "50ms", "--poll", "10ms")
	if r.code != 3 {
		t.Errorf("wait --from codex with only gemini's reply: exit %d, want 3", r.code)
	}
	runCollab(t, env, "", "send", "--agent", "codex", "--in-reply-to", id, "from codex")
	r = runCollab(t, env, "", "wait", "--reply-to", id, "--from", "codex", "--json")
	var m channel.Message
	if err := json.Unmarshal([]byte(r.stdout), &m); r.code != 0 || err != nil || m.From != "codex" || m.Content.Text != "from codex" {
		t.Errorf("wait --json: exit %d, %q (%v)", r.code, r.stdout, err)
	}
	for _, args := range [][]string{
		{"wait"},
		{"wait", "--reply-to", "../etc"},
		{"wait", "--reply-to", id, "--channel", "a/b"},
		{"wait", "--reply-to", id, "--from", "-x"},
		{"wait", "--reply-to", id, "extra"},
	} {
		if r := runCollab(t, env, "", args...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
	}
}

// TestSendWaitWokenByNATS: with polling practically off, the reply's NATS
// announcement is what ends the wait.
func TestSendWaitWokenByNATS(t *testing.T) {
	url := natsServer(t)
	root := newTree(t)
	registered(t, root, "codex") // answered by hand below
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev", "NATS_URL": url}
	done := sendWait(t, env, "--agent", "lead", "--to", "codex", "--poll", "1h", "--timeout", "60s", "quick question")
	req := requestIn(t, root, "dev", "lead")
	// The waiter subscribes after posting; announce until it hears one.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if r := runCollab(t, env, "", "send", "--agent", "codex", "--in-reply-to", req.ID, "answer"); r.code != 0 {
			t.Fatalf("reply: %+v", r)
		}
		select {
		case r := <-done:
			if r.code != 0 || r.stdout != "answer\n" {
				t.Errorf("send --wait: exit %d, %q %q", r.code, r.stdout, r.stderr)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("send --wait never woke up")
		}
	}
}

// delegatingCLI is the fake model CLI of the delegation test: an agent
// with a next hop in $FAKE_CLI_DELEGATE ("a1=a2,a2=a3") delegates with
// `collab send --wait` and answers with what it got back; others answer
// "ok".
func delegatingCLI() {
	io.Copy(io.Discard, os.Stdin)
	me := os.Getenv("COLLAB_AGENT")
	next := ""
	for _, pair := range strings.Split(os.Getenv("FAKE_CLI_DELEGATE"), ",") {
		if from, to, ok := strings.Cut(pair, "="); ok && from == me {
			next = to
		}
	}
	if next == "" {
		fmt.Println("ok", os.Getenv("COLLAB_MESSAGE_ID"))
		os.Exit(0)
	}
	var out, errb bytes.Buffer
	// As main runs it: with the telemetry of the variables and TRACEPARENT.
	err := telemetry.Run(context.Background(), []string{"send", "--to", next, "--wait", "--timeout", "120s", "--poll", "50ms",
		"please help with " + os.Getenv("COLLAB_MESSAGE_ID")}, env(os.Getenv), strings.NewReader(""), &out, &errb, run)
	// Exit 4: refused, with the guard's notice printed as the answer.
	if code := exitCode(err, &errb); code != 0 && code != exitRefused {
		fmt.Fprintf(os.Stderr, "delegation failed (exit %d): %s", code, errb.String())
		os.Exit(1)
	}
	fmt.Printf("%s got: %s", me, out.String())
	os.Exit(0)
}

// TestDelegationChainBoundedByMaxHops: agents inside watchers delegate
// with `collab send --wait`; each delegated message is one hop deeper
// (COLLAB_HOPS + 1), so the chain stops at the watchers' --max-hops with a
// notice, and the answers unwind back to the person who asked.
func TestDelegationChainBoundedByMaxHops(t *testing.T) {
	root := newTree(t)
	cliEnv := []string{"FAKE_CLI_DELEGATE=a1=a2,a2=a3,a3=a4"}
	for _, a := range []string{"a1", "a2", "a3"} {
		startWatcher(t, root, a, "dev", cliEnv, "--max-hops", "2")
	}
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
	r := runCollab(t, env, "", "send", "--wait", "--agent", "human", "--to", "a1", "--poll", "50ms", "--timeout", "120s", "start the chain")
	if r.code != 0 {
		t.Fatalf("send --wait: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if want := "a1 got: a2 got: [collab] a3 stopped answering this thread"; !strings.HasPrefix(r.stdout, want) {
		t.Errorf("answer = %q, want it to start with %q", r.stdout, want)
	}
	msgs, _, err := channel.ReadAll(tree.Root(root), "dev", channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hops := map[string]int{}
	for _, m := range msgs {
		if strings.HasPrefix(m.Content.Text, "please help") {
			hops[m.From+"->"+m.To] = m.Metadata.Hops
		}
		if m.From == "a3" && m.Type != "notice" && !m.IsDeliveryReport() { // a2 is told of the refusal
			t.Errorf("a3 answered at hops %d: %q; the hop limit should have stopped it", m.Metadata.Hops, m.Content.Text)
		}
	}
	if want := map[string]int{"a1->a2": 1, "a2->a3": 2}; fmt.Sprint(hops) != fmt.Sprint(want) {
		t.Errorf("delegated messages' hops = %v, want %v", hops, want)
	}
}
