package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestPromptID: the fake model of scenarios 18 and 19 finds the message to
// answer in the watcher's first prompt and in a live follow-up.
func TestPromptID(t *testing.T) {
	golden, err := os.ReadFile("../../agent/prompt/testdata/minimal.golden")
	if err != nil {
		t.Fatal(err)
	}
	followUp := "# New messages in #dev since your last answer, oldest first\n\n" +
		"[2026-01-11 16:30:00] alice → bot:\n> an earlier one\n\n" +
		"# The next message to answer\n\nFrom: alice\nTo: bot\nTime: 2026-01-11 16:31:00\n" +
		"ID: msg-20260111-163100-alice-beef\nIn reply to: msg-20260111-163000-bot-0001\n\n```\ns18 message 2 of 6\n```\n\n" +
		"Answer as before: print only your reply to alice (or NO_REPLY); the instructions of the first prompt still hold."
	for _, c := range []struct{ name, prompt, want string }{
		{"first prompt", string(golden), "msg-20260111-163000-alice-4c78"},
		{"follow-up", followUp, "msg-20260111-163100-alice-beef"},
		{"none", "no message here\nID:", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := promptID(c.prompt); got != c.want {
				t.Errorf("promptID = %q, want %q", got, c.want)
			}
		})
	}
}

func FuzzPromptID(f *testing.F) {
	f.Add("x\nID: msg-20260111-163000-alice-4c78\n\n```\nhi\n```")
	f.Add("\nID: ")
	f.Fuzz(func(t *testing.T, prompt string) {
		if got := promptID(prompt); strings.ContainsAny(got, "\n") || got != strings.TrimSpace(got) {
			t.Errorf("promptID(%q) = %q: one trimmed line expected", prompt, got)
		}
	})
}

// TestGroupMembers: a process in a group of its own is found by its group
// until it has exited (and been reaped).
func TestGroupMembers(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if got := groupMembers([]int{pid}); !slices.Equal(got, []int{pid}) {
		t.Errorf("groupMembers(%d) = %v while it runs", pid, got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got := groupMembers([]int{pid}); len(got) != 0 {
		t.Errorf("groupMembers(%d) = %v after it ended", pid, got)
	}
}

// TestSkipFails: a skip naming a variable fails when it is 1 (as
// COLLAB_TEST_REQUIRE_CLIS), whoever runs the harness; the others when
// COLLAB_TEST_REQUIRE_BINDFS is 1 and the harness is root.
func TestSkipFails(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	clis := errSkip{why: "no claude", require: "COLLAB_TEST_REQUIRE_CLIS"}
	root := errSkip{why: "needs root"}
	for _, c := range []struct {
		name string
		skip errSkip
		env  func(string) string
		euid int
		want bool
	}{
		{"cli, not required", clis, env(), 0, false},
		{"cli, required", clis, env("COLLAB_TEST_REQUIRE_CLIS", "1"), 1000, true},
		{"cli, only bindfs required", clis, env("COLLAB_TEST_REQUIRE_BINDFS", "1"), 0, false},
		{"root, CI as root", root, env("COLLAB_TEST_REQUIRE_BINDFS", "1"), 0, true},
		{"root, CI not root", root, env("COLLAB_TEST_REQUIRE_BINDFS", "1"), 1000, false},
		{"root, not CI", root, env(), 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.skip.fails(c.env, c.euid); got != c.want {
				t.Errorf("fails = %v, want %v", got, c.want)
			}
		})
	}
}
