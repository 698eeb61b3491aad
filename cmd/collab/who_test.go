package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// deadPID returns the PID of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0") // -race waits 1 s at exit
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if proc.PIDAlive(pid) {
		t.Fatalf("pid %d of a reaped child is alive", pid)
	}
	return pid
}

// whoTree makes a shared tree with one agent in each state and returns its
// environment.
//
//	alpha    AWAKE/IDLE, 4 s old, another host, role "lead" in the registry
//	beta     AWAKE/WORKING on msg-x, two channels, an unknown field
//	gamma    AWAKE, 5 min old: STALE
//	delta    OFFLINE
//	epsilon  registered only: OFFLINE
//	local    AWAKE on this host with a dead PID: STALE
//	remote   AWAKE on another host with the same dead PID: AWAKE/IDLE
//	broken   an unreadable heartbeat: UNKNOWN and a warning
func whoTree(t *testing.T) map[string]string {
	t.Helper()
	root := tree.Root(newTree(t))
	now := time.Now()
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Fatalf("no hostname: %q, %v", host, err)
	}
	dead := deadPID(t)
	ts := func(d time.Duration) string { return presence.FormatTime(now.Add(-d)) }
	for _, s := range []presence.Status{
		{AgentID: "alpha", Timestamp: ts(4 * time.Second), State: "AWAKE", Substate: "IDLE", WatcherPID: 1, Channel: "general", Host: "other-host"},
		{AgentID: "beta", Timestamp: ts(time.Second), State: "AWAKE", Substate: "WORKING", MessageID: "msg-x", Channel: "a", Channels: []string{"a", "b"}, Host: "other-host",
			Extra: map[string]json.RawMessage{"mood": json.RawMessage(`"busy"`)}},
		{AgentID: "gamma", Timestamp: ts(5 * time.Minute), State: "AWAKE", Substate: "IDLE", Channel: "general", Host: "other-host"},
		{AgentID: "delta", Timestamp: ts(3 * time.Hour), State: "OFFLINE", Substate: "IDLE", Channel: "general", Host: "other-host"},
		{AgentID: "local", Timestamp: ts(0), State: "AWAKE", Substate: "IDLE", WatcherPID: dead, Channel: "general", Host: host},
		{AgentID: "remote", Timestamp: ts(0), State: "AWAKE", Substate: "IDLE", WatcherPID: dead, Channel: "general", Host: "not-" + host},
	} {
		if err := presence.Write(root, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root.Presence(), "broken.json"), []byte(`{"state":`), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root.Registry(), 0o777); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"alpha.json":   `{"id":"alpha","role":"lead","host":"other-host"}`,
		"epsilon.json": `{"role":"qc","host":"vm-9"}`,
	} {
		if err := os.WriteFile(filepath.Join(root.Registry(), name), []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{"COLLAB_ROOT": string(root)}
}

// tableRows splits a who table into its header and rows of fields.
func tableRows(t *testing.T, out string) (header []string, rows map[string][]string, order []string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header = strings.Fields(lines[0])
	rows = map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != len(header) {
			t.Fatalf("row %q has %d columns, want %d", l, len(f), len(header))
		}
		rows[f[0]] = f
		order = append(order, f[0])
	}
	return header, rows, order
}

func TestWhoTable(t *testing.T) {
	env := whoTree(t)
	r := runCollab(t, env, "", "who")
	if r.code != 0 {
		t.Fatalf("exit code %d, stderr %q", r.code, r.stderr)
	}
	header, rows, order := tableRows(t, r.stdout)
	if want := []string{"AGENT", "STATE", "AGE", "HOST", "CHANNEL", "MESSAGE"}; !reflect.DeepEqual(header, want) {
		t.Errorf("header = %v, want %v", header, want)
	}
	if want := []string{"alpha", "beta", "broken", "delta", "epsilon", "gamma", "local", "remote"}; !reflect.DeepEqual(order, want) {
		t.Errorf("agents = %v, want %v", order, want)
	}
	host, _ := os.Hostname()
	// An age in whole seconds may tick over while the test runs: "~4s"
	// accepts 4s or 5s.
	want := map[string][]string{
		"alpha":   {"alpha", "AWAKE/IDLE", "~4s", "other-host", "general", "-"},
		"beta":    {"beta", "AWAKE/WORKING", "~1s", "other-host", "a,b", "msg-x"},
		"broken":  {"broken", "UNKNOWN", "-", "-", "-", "-"},
		"delta":   {"delta", "OFFLINE", "3h", "other-host", "general", "-"},
		"epsilon": {"epsilon", "OFFLINE", "-", "vm-9", "-", "-"},
		"gamma":   {"gamma", "STALE", "5m", "other-host", "general", "-"},
		"local":   {"local", "STALE", "~0s", host, "general", "-"},
		"remote":  {"remote", "AWAKE/IDLE", "~0s", "not-" + host, "general", "-"},
	}
	for agent, w := range want {
		got := slices.Clone(rows[agent])
		if age, ok := strings.CutPrefix(w[2], "~"); ok && len(got) > 2 {
			n, _ := strconv.Atoi(strings.TrimSuffix(age, "s"))
			if got[2] == fmt.Sprintf("%ds", n+1) {
				got[2] = age
			}
			w = slices.Clone(w)
			w[2] = age
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("row %s = %v, want %v", agent, got, w)
		}
	}
	if n := strings.Count(r.stderr, "warning"); n != 1 || !strings.Contains(r.stderr, "broken.json") {
		t.Errorf("stderr = %q, want one warning about broken.json", r.stderr)
	}
}

func TestWhoNamed(t *testing.T) {
	env := whoTree(t)
	r := runCollab(t, env, "", "who", "remote", "nobody", "alpha", "epsilon", "alpha")
	if r.code != 0 {
		t.Fatalf("exit code %d, stderr %q", r.code, r.stderr)
	}
	_, rows, order := tableRows(t, r.stdout)
	if want := []string{"alpha", "epsilon", "nobody", "remote"}; !reflect.DeepEqual(order, want) {
		t.Errorf("agents = %v, want %v", order, want)
	}
	for agent, state := range map[string]string{"alpha": "AWAKE/IDLE", "epsilon": "OFFLINE", "nobody": "UNKNOWN", "remote": "AWAKE/IDLE"} {
		if got := rows[agent][1]; got != state {
			t.Errorf("%s is %s, want %s", agent, got, state)
		}
	}
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing: broken.json was not asked for", r.stderr)
	}

	r = runCollab(t, env, "", "who", "broken", "broken")
	if _, rows, _ := tableRows(t, r.stdout); r.code != 0 || len(rows) != 1 || rows["broken"][1] != "UNKNOWN" || strings.Count(r.stderr, "broken") != 1 {
		t.Errorf("who broken: code %d, stdout %q, stderr %q; want one UNKNOWN row and one warning", r.code, r.stdout, r.stderr)
	}
}

func TestWhoJSON(t *testing.T) {
	env := whoTree(t)
	r := runCollab(t, env, "", "who", "--json")
	if r.code != 0 {
		t.Fatalf("exit code %d, stderr %q", r.code, r.stderr)
	}
	var got []struct {
		Agent      string                     `json:"agent"`
		State      string                     `json:"state"`
		AgeSeconds *int64                     `json:"age_seconds"`
		Host       string                     `json:"host"`
		Channels   string                     `json:"channels"`
		Role       string                     `json:"role"`
		Status     map[string]json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, r.stdout)
	}
	by := map[string]int{}
	for i, e := range got {
		by[e.Agent] = i
	}
	if len(got) != 8 {
		t.Fatalf("%d entries, want 8:\n%s", len(got), r.stdout)
	}
	alpha := got[by["alpha"]]
	if alpha.State != "AWAKE/IDLE" || alpha.Role != "lead" || alpha.AgeSeconds == nil || *alpha.AgeSeconds < 4 || *alpha.AgeSeconds > 10 {
		t.Errorf("alpha = %+v", alpha)
	}
	if string(alpha.Status["agent_id"]) != `"alpha"` || string(alpha.Status["host"]) != `"other-host"` {
		t.Errorf("alpha's status = %s", alpha.Status)
	}
	beta := got[by["beta"]]
	if beta.State != "AWAKE/WORKING" || string(beta.Status["mood"]) != `"busy"` || string(beta.Status["message_id"]) != `"msg-x"` {
		t.Errorf("beta = %+v, want WORKING with its unknown field kept", beta)
	}
	eps := got[by["epsilon"]]
	if eps.State != "OFFLINE" || eps.Status != nil || eps.AgeSeconds != nil || eps.Role != "qc" || eps.Host != "vm-9" {
		t.Errorf("epsilon = %+v, want OFFLINE, no status, no age, role qc, the registry's host vm-9", eps)
	}
	if alpha.Host != "other-host" || alpha.Channels != "general" {
		t.Errorf("alpha's host %q, channels %q; want its heartbeat's other-host, general", alpha.Host, alpha.Channels)
	}
	for agent, state := range map[string]string{"gamma": "STALE", "delta": "OFFLINE", "local": "STALE", "remote": "AWAKE/IDLE", "broken": "UNKNOWN"} {
		if got := got[by[agent]].State; got != state {
			t.Errorf("%s is %s, want %s", agent, got, state)
		}
	}
}

func TestWhoCheck(t *testing.T) {
	env := whoTree(t)
	tests := []struct {
		agent string
		code  int
		warn  bool
	}{
		{"alpha", 0, false},
		{"beta", 0, false},
		{"remote", 0, false}, // a dead PID of another host is not checked
		{"gamma", 1, false},  // stale
		{"local", 1, false},  // this host, dead PID
		{"delta", 1, false},  // offline
		{"epsilon", 1, false},
		{"nobody", 1, false},
		{"broken", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			r := runCollab(t, env, "", "who", "--check", tt.agent)
			if r.code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			if got := r.stderr != ""; got != tt.warn {
				t.Errorf("stderr = %q, want a warning: %v", r.stderr, tt.warn)
			}
		})
	}
}

func TestWhoStaleAfter(t *testing.T) {
	env := whoTree(t)
	tests := []struct {
		name string
		env  string
		args []string
		want string // gamma's state: its heartbeat is 5 minutes old
	}{
		{"default", "", nil, "STALE"},
		{"flag", "", []string{"--stale-after", "10m"}, "AWAKE/IDLE"},
		{"env", "10m", nil, "AWAKE/IDLE"},
		{"env in seconds", "600", nil, "AWAKE/IDLE"},
		{"flag over env", "10m", []string{"--stale-after=1m"}, "STALE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{"COLLAB_ROOT": env["COLLAB_ROOT"], "COLLAB_STALE_AFTER": tt.env}
			r := runCollab(t, e, "", append([]string{"who", "gamma"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit code %d, stderr %q", r.code, r.stderr)
			}
			if _, rows, _ := tableRows(t, r.stdout); rows["gamma"][1] != tt.want {
				t.Errorf("gamma is %s, want %s", rows["gamma"][1], tt.want)
			}
		})
	}
}

func TestWhoBadInput(t *testing.T) {
	tests := []struct {
		name string
		env  string // COLLAB_STALE_AFTER
		args []string
		want string
	}{
		{"climbing name", "", []string{"../x"}, "invalid name"},
		{"slash", "", []string{"a/b"}, "invalid name"},
		{"empty name", "", []string{""}, "empty"},
		{"dash name", "", []string{"--", "-x"}, "starts with '-'"},
		{"check climbing", "", []string{"--check", "../x"}, "invalid name"},
		{"check empty", "", []string{"--check", ""}, "empty"},
		{"check and names", "", []string{"--check", "a", "b"}, "--check"},
		{"check and json", "", []string{"--check", "a", "--json"}, "--check"},
		{"zero limit", "", []string{"--stale-after", "0s"}, "positive"},
		{"bad limit", "", []string{"--stale-after", "soon"}, "invalid argument"},
		{"bad env limit", "soon", nil, "COLLAB_STALE_AFTER"},
		{"negative env limit", "-5s", nil, "positive"},
		{"infinite env limit", "Inf", nil, "COLLAB_STALE_AFTER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			env := map[string]string{"COLLAB_ROOT": root, "COLLAB_STALE_AFTER": tt.env}
			r := runCollab(t, env, "", append([]string{"who"}, tt.args...)...)
			if r.code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not say %q", r.stderr, tt.want)
			}
			if got := filesUnder(t, root); len(got) != 0 {
				t.Errorf("created %v", got)
			}
		})
	}
}

func TestWhoEmpty(t *testing.T) {
	env := map[string]string{"COLLAB_ROOT": newTree(t)}
	r := runCollab(t, env, "", "who")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "AGENT  STATE  AGE  HOST  CHANNEL  MESSAGE" || !strings.Contains(r.stderr, "no agents") {
		t.Errorf("who on an empty tree: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "who", "--json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("who --json on an empty tree: code %d, stdout %q", r.code, r.stdout)
	}
}

func TestWhoHelp(t *testing.T) {
	r := runCollab(t, nil, "", "who", "--help")
	for _, want := range []string{"COLLAB_STALE_AFTER", "COLLAB_ROOT", "UNKNOWN", "STALE", "--check"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("help does not mention %s:\n%s", want, r.stderr)
		}
	}
	if r.code != 0 {
		t.Errorf("exit code %d, want 0", r.code)
	}
}

// BenchmarkWho1000 runs "collab who" over 1,000 heartbeats.
func BenchmarkWho1000(b *testing.B) {
	root := tree.Root(newTree(b))
	now := presence.FormatTime(time.Now())
	for i := range 1000 {
		s := presence.Status{AgentID: fmt.Sprintf("agent-%04d", i), Timestamp: now, State: "AWAKE", Substate: "IDLE",
			WatcherPID: 1000 + i, Channel: "general", Host: fmt.Sprintf("vm-%d", i%8)}
		if err := presence.Write(root, s); err != nil {
			b.Fatal(err)
		}
	}
	env := map[string]string{"COLLAB_ROOT": string(root)}
	for b.Loop() {
		var errb strings.Builder
		err := run(b.Context(), []string{"who"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &errb)
		if err != nil || errb.Len() > 0 {
			b.Fatalf("who: %v %s", err, errb.String())
		}
	}
}

// TestWhoClockAhead: a heartbeat dated beyond the tolerated skew in the
// future is shown as AHEAD and fails --check; one within it is awake.
func TestWhoClockAhead(t *testing.T) {
	root := tree.Root(newTree(t))
	now := time.Now()
	for agent, at := range map[string]time.Time{"ahead": now.Add(time.Hour), "near": now.Add(presence.MaxSkew / 2)} {
		s := presence.Status{AgentID: agent, State: presence.StateAwake, Substate: presence.SubIdle, Host: "elsewhere", Timestamp: presence.FormatTime(at)}
		if err := presence.Write(root, s); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"COLLAB_ROOT": string(root)}
	if r := runCollab(t, env, "", "who", "--check", "ahead"); r.code != 1 {
		t.Errorf("who --check on a heartbeat an hour ahead: exit %d, want 1", r.code)
	}
	if r := runCollab(t, env, "", "who", "--check", "near"); r.code != 0 {
		t.Errorf("who --check on a heartbeat within the skew: exit %d, want 0", r.code)
	}
	r := runCollab(t, env, "", "who", "ahead")
	if !strings.Contains(r.stdout, presence.Ahead) {
		t.Errorf("who ahead: %q does not show %s", r.stdout, presence.Ahead)
	}
}
