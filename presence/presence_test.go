package presence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

var now = time.Date(2026, 1, 11, 16, 30, 0, 0, time.UTC)

func at(d time.Duration) string { return FormatTime(now.Add(d)) }

func TestEffective(t *testing.T) {
	const dead, live = 111, 222
	alive := func(pid int) bool { return pid == live }
	tests := []struct {
		name  string
		s     Status
		stale time.Duration
		local string
		alive func(int) bool
		want  string
	}{
		{"idle", Status{Timestamp: at(-5 * time.Second), State: "AWAKE", Substate: "IDLE"}, 0, "", alive, AwakeIdle},
		{"working", Status{Timestamp: at(-5 * time.Second), State: "AWAKE", Substate: "WORKING"}, 0, "", alive, AwakeWorking},
		{"no substate", Status{Timestamp: at(0), State: "AWAKE"}, 0, "", alive, AwakeIdle},
		{"lower case", Status{Timestamp: at(0), State: "awake", Substate: "working"}, 0, "", alive, AwakeWorking},
		{"at the limit", Status{Timestamp: at(-DefaultStaleAfter), State: "AWAKE"}, 0, "", alive, AwakeIdle},
		{"just past the limit", Status{Timestamp: at(-DefaultStaleAfter - time.Millisecond), State: "AWAKE"}, 0, "", alive, Stale},
		{"old", Status{Timestamp: at(-time.Hour), State: "AWAKE", Substate: "WORKING"}, 0, "", alive, Stale},
		{"custom limit", Status{Timestamp: at(-20 * time.Second), State: "AWAKE"}, 15 * time.Second, "", alive, Stale},
		{"custom limit fresh", Status{Timestamp: at(-20 * time.Second), State: "AWAKE"}, 30 * time.Second, "", alive, AwakeIdle},
		{"future within the skew is fresh", Status{Timestamp: at(MaxSkew - time.Second), State: "AWAKE"}, 0, "", alive, AwakeIdle},
		{"future beyond the skew is ahead", Status{Timestamp: at(time.Hour), State: "AWAKE"}, 0, "", alive, Ahead},
		{"offline ahead is offline", Status{Timestamp: at(time.Hour), State: "OFFLINE"}, 0, "", alive, Offline},
		{"bad timestamp", Status{Timestamp: "yesterday", State: "AWAKE"}, 0, "", alive, Stale},
		{"no timestamp", Status{State: "AWAKE"}, 0, "", alive, Stale},
		{"offline", Status{Timestamp: at(0), State: "OFFLINE"}, 0, "", alive, Offline},
		{"old offline", Status{Timestamp: at(-time.Hour), State: "OFFLINE"}, 0, "", alive, Offline},
		{"local dead pid", Status{Timestamp: at(0), State: "AWAKE", WatcherPID: dead, Host: "vm-1"}, 0, "vm-1", alive, Stale},
		{"local dead pid any case", Status{Timestamp: at(0), State: "AWAKE", WatcherPID: dead, Host: "VM-1"}, 0, "vm-1", alive, Stale},
		{"local live pid", Status{Timestamp: at(0), State: "AWAKE", WatcherPID: live, Host: "vm-1"}, 0, "vm-1", alive, AwakeIdle},
		{"remote dead pid", Status{Timestamp: at(0), State: "AWAKE", WatcherPID: dead, Host: "vm-2"}, 0, "vm-1", alive, AwakeIdle},
		{"no host", Status{Timestamp: at(0), State: "AWAKE", WatcherPID: dead}, 0, "", alive, AwakeIdle},
		{"unknown pid", Status{Timestamp: at(0), State: "AWAKE", Host: "vm-1"}, 0, "vm-1", func(int) bool { return false }, AwakeIdle},
		{"no pid check", Status{Timestamp: at(0), State: "AWAKE", WatcherPID: dead, Host: "vm-1"}, 0, "vm-1", nil, AwakeIdle},
		{"offline dead pid", Status{Timestamp: at(0), State: "OFFLINE", WatcherPID: dead, Host: "vm-1"}, 0, "vm-1", alive, Offline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Effective(now, tt.stale, tt.local, tt.alive); got != tt.want {
				t.Errorf("Effective = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestEffectiveRemotePIDNotChecked makes sure another host's PID is never
// looked up here, whatever it is.
func TestEffectiveRemotePIDNotChecked(t *testing.T) {
	s := Status{Timestamp: at(0), State: "AWAKE", WatcherPID: 42, Host: "elsewhere"}
	s.Effective(now, 0, "here", func(pid int) bool {
		t.Errorf("alive(%d) called for a heartbeat of another host", pid)
		return false
	})
}

func TestTime(t *testing.T) {
	tests := []struct {
		ts   string
		want time.Time
		ok   bool
	}{
		{"2026-01-11T16:30:00.000Z", now, true},
		{"2026-01-11T16:30:00Z", now, true},
		{"2026-01-11T17:30:00+01:00", now, true},
		{"2026-01-11T16:30:00.250", now.Add(250 * time.Millisecond), true},
		{"2026-01-11T16:30:00", now, true},
		{"", time.Time{}, false},
		{"1736613000", time.Time{}, false},
		{"2026-01-11 16:30:00", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.ts, func(t *testing.T) {
			got, ok := Status{Timestamp: tt.ts}.Time()
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Errorf("Time() = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestAge(t *testing.T) {
	if got, ok := (Status{Timestamp: at(-3 * time.Minute)}).Age(now); !ok || got != 3*time.Minute {
		t.Errorf("Age = %v, %v; want 3m0s, true", got, ok)
	}
	if got, ok := (Status{Timestamp: at(time.Second)}).Age(now); !ok || got != -time.Second {
		t.Errorf("future Age = %v, %v; want -1s, true", got, ok)
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		agent   string
		want    Status
		wantErr bool
	}{
		{
			name:  "seed",
			data:  `{"agent_id": "codex", "timestamp": "2026-01-11T16:30:00.000Z", "state": "AWAKE", "substate": "IDLE", "watcher_pid": 12345, "channel": "agent-os-paper"}`,
			agent: "codex",
			want:  Status{AgentID: "codex", Timestamp: "2026-01-11T16:30:00.000Z", State: "AWAKE", Substate: "IDLE", WatcherPID: 12345, Channel: "agent-os-paper"},
		},
		{
			name:  "agent from file name",
			data:  `{"state": "OFFLINE"}`,
			agent: "gemini",
			want:  Status{AgentID: "gemini", State: "OFFLINE"},
		},
		{
			name:  "pid as string",
			data:  `{"state": "AWAKE", "watcher_pid": "77"}`,
			agent: "a",
			want:  Status{AgentID: "a", State: "AWAKE", WatcherPID: 77},
		},
		{
			name:  "pid as float",
			data:  `{"state": "AWAKE", "watcher_pid": 77.0}`,
			agent: "a",
			want:  Status{AgentID: "a", State: "AWAKE", WatcherPID: 77},
		},
		{
			name:  "nonsense pid is unknown",
			data:  `{"state": "AWAKE", "watcher_pid": -1}`,
			agent: "a",
			want:  Status{AgentID: "a", State: "AWAKE"},
		},
		{
			name:  "pid beyond 32 bits is unknown",
			data:  `{"state": "AWAKE", "watcher_pid": 4294967297}`,
			agent: "a",
			want:  Status{AgentID: "a", State: "AWAKE"},
		},
		{
			name:  "nulls",
			data:  `{"agent_id": null, "state": "AWAKE", "host": null, "channels": null}`,
			agent: "a",
			want:  Status{AgentID: "a", State: "AWAKE"},
		},
		{
			name:  "extensions and unknown fields",
			data:  `{"state":"AWAKE","substate":"WORKING","message_id":"msg-1","channels":["a","b"],"queue":2,"counters":{"handled":3},"mood":{"x":[1,2]},"zz":null}`,
			agent: "a",
			want: Status{AgentID: "a", State: "AWAKE", Substate: "WORKING", MessageID: "msg-1", Channels: []string{"a", "b"},
				Queue: 2, Counters: map[string]int64{"handled": 3},
				Extra: map[string]json.RawMessage{"mood": json.RawMessage(`{"x":[1,2]}`), "zz": json.RawMessage(`null`)}},
		},
		{name: "other agent", data: `{"agent_id": "codex", "state": "AWAKE"}`, agent: "claude", wantErr: true},
		{name: "no state", data: `{"agent_id": "a"}`, agent: "a", wantErr: true},
		{name: "unknown state", data: `{"state": "ASLEEP"}`, agent: "a", wantErr: true},
		{name: "state not a string", data: `{"state": 1}`, agent: "a", wantErr: true},
		{name: "channel not a string", data: `{"state": "AWAKE", "channel": ["x"]}`, agent: "a", wantErr: true},
		{name: "array", data: `[]`, agent: "a", wantErr: true},
		{name: "null", data: `null`, agent: "a", wantErr: true},
		{name: "truncated", data: `{"state": "AWA`, agent: "a", wantErr: true},
		{name: "empty", data: ``, agent: "a", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.data), tt.agent)
			if tt.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("Decode error = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		s    Status
		want string
	}{
		{
			name: "seed fields in seed order",
			s:    Status{AgentID: "codex", Timestamp: "2026-01-11T16:30:00.000Z", State: "AWAKE", Substate: "IDLE", WatcherPID: 12345, Channel: "agent-os-paper", Host: "vm-2"},
			want: `{"agent_id":"codex","timestamp":"2026-01-11T16:30:00.000Z","state":"AWAKE","substate":"IDLE","watcher_pid":12345,"channel":"agent-os-paper","host":"vm-2"}`,
		},
		{
			name: "extensions, then unknown fields by name",
			s: Status{AgentID: "a", Timestamp: "t", State: "AWAKE", Substate: "WORKING", MessageID: "m<1>", Queue: 1,
				Extra: map[string]json.RawMessage{"z": json.RawMessage(`1`), "b": json.RawMessage(`{ "c" : true }`), "state": json.RawMessage(`"OFFLINE"`)}},
			want: `{"agent_id":"a","timestamp":"t","state":"AWAKE","substate":"WORKING","watcher_pid":0,"channel":"","host":"","message_id":"m<1>","queue":1,"b":{"c":true},"z":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.s.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Encode =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestWriteRead(t *testing.T) {
	root := tree.Root(t.TempDir())
	s := Status{AgentID: "codex", State: StateAwake, Substate: SubIdle, WatcherPID: 12, Channel: "c", Host: "h",
		Extra: map[string]json.RawMessage{"note": json.RawMessage(`"kept"`)}}
	before := time.Now().Add(-time.Second)
	if err := Write(root, s); err != nil {
		t.Fatal(err)
	}
	got, err := Read(root, "codex")
	if err != nil {
		t.Fatal(err)
	}
	ts, ok := got.Time()
	if !ok || ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
		t.Errorf("Write stamped %q, want about now", got.Timestamp)
	}
	if !strings.HasSuffix(got.Timestamp, "Z") || len(got.Timestamp) != len(TimeFormat) {
		t.Errorf("timestamp %q is not in TimeFormat", got.Timestamp)
	}
	got.Timestamp = ""
	if !reflect.DeepEqual(got, s) {
		t.Errorf("Read =\n%#v\nwant\n%#v", got, s)
	}

	// A second write replaces the first and leaves no temp file behind.
	s.Substate, s.Timestamp = SubWorking, at(0)
	if err := Write(root, s); err != nil {
		t.Fatal(err)
	}
	if got, _ := Read(root, "codex"); got.Substate != SubWorking || got.Timestamp != at(0) {
		t.Errorf("after rewrite: %+v", got)
	}
	entries, _ := os.ReadDir(root.Presence())
	if len(entries) != 1 || entries[0].Name() != "codex.json" {
		t.Errorf("presence folder holds %v, want only codex.json", entries)
	}

	if _, err := Read(root, "nobody"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a missing agent: %v, want fs.ErrNotExist", err)
	}
}

func TestWriteRefuses(t *testing.T) {
	tests := []struct {
		name string
		s    Status
	}{
		{"climbing name", Status{AgentID: "../x", State: StateAwake}},
		{"slash", Status{AgentID: "a/b", State: StateAwake}},
		{"empty name", Status{State: StateAwake}},
		{"dot name", Status{AgentID: ".hidden", State: StateAwake}},
		{"no state", Status{AgentID: "a"}},
		{"bad state", Status{AgentID: "a", State: "ASLEEP"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Write(tree.Root(dir), tt.s); err == nil {
				t.Fatal("Write succeeded")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("Write left %v behind", entries)
			}
		})
	}
}

// TestReadAll runs in a synctest bubble: the broken files' rereads wait on
// its fake clock, not for real.
func TestReadAll(t *testing.T) { synctest.Test(t, testReadAll) }

func testReadAll(t *testing.T) {
	root := tree.Root(t.TempDir())
	all, skips, err := ReadAll(root)
	if err != nil || len(all) != 0 || len(skips) != 0 {
		t.Fatalf("ReadAll of a missing folder = %v, %v, %v; want nothing", all, skips, err)
	}

	for _, a := range []string{"zed", "alpha", "mid"} {
		if err := Write(root, Status{AgentID: a, Timestamp: at(0), State: StateAwake}); err != nil {
			t.Fatal(err)
		}
	}
	dir := root.Presence()
	put := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	put(".alpha.json.1234.tmp", "{")                       // in-flight write: ignored
	put(".hidden.json", "{")                               // dot-file: ignored
	put("notes.txt", "hello")                              // not a heartbeat: ignored
	put("broken.json", `{"state":`)                        // skipped
	put("liar.json", `{"agent_id":"zed","state":"AWAKE"}`) // skipped
	put("bad name.json", `{"state":"AWAKE"}`)              // skipped
	put("huge.json", `{"state":"AWAKE","pad":"`+strings.Repeat("x", MaxSize)+`"}`)
	if err := os.Symlink(filepath.Join(dir, "zed.json"), filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.json"), 0o777); err != nil {
		t.Fatal(err)
	}

	all, skips, err = ReadAll(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range all {
		got = append(got, s.AgentID)
	}
	if want := []string{"alpha", "mid", "zed"}; !reflect.DeepEqual(got, want) {
		t.Errorf("agents = %v, want %v", got, want)
	}
	skipped := map[string]string{}
	for _, s := range skips {
		skipped[s.File] = s.String()
	}
	want := map[string]string{
		"broken.json":   "malformed",
		"liar.json":     `agent_id "zed"`,
		"bad name.json": "invalid name",
		"huge.json":     "too large",
		"link.json":     "symbolic link",
		"folder.json":   "not a regular file",
	}
	for file, msg := range want {
		if !strings.Contains(skipped[file], msg) {
			t.Errorf("skip of %s = %q, want it to say %q", file, skipped[file], msg)
		}
	}
	if len(skips) != len(want) {
		t.Errorf("skips = %v, want %d", skips, len(want))
	}
	for _, s := range skips {
		if strings.Contains(s.String(), dir) {
			t.Errorf("skip %q repeats the folder", s)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"agent_id": "codex", "timestamp": "2026-01-11T16:30:00.000Z", "state": "AWAKE", "substate": "IDLE", "watcher_pid": 12345, "channel": "agent-os-paper", "host": "vm-2"}`,
		`{"state":"OFFLINE","watcher_pid":"12","counters":{"a":1},"channels":["x"],"extra":[null,{"\u003c":"\ud800"}]}`,
		`{"state":"awake","agent_id":null,"queue":1e3}`,
		`{"state":"AWAKE","live":{"sessions":2,"max":4,"rss_bytes":9,"processes":[{"key":"dev","pid":7,"rss_bytes":9},{"key":"x","pid":8}]}}`,
		`{"state":"AWAKE","live":{"sessions":"2"}}`, `{"state":"AWAKE","live":null}`,
		`[]`, `null`, `{}`, `{"state":"AWAKE","state":"OFFLINE"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(data, "a")
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if s.AgentID != "a" {
			t.Fatalf("AgentID = %q, want the file's agent", s.AgentID)
		}
		s.Effective(now, 0, "h", func(int) bool { return false })
		b1, err := s.Encode()
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		s2, err := Decode(b1, "a")
		if err != nil {
			t.Fatalf("Decode of own encoding %s: %v", b1, err)
		}
		b2, err := s2.Encode()
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("round trip changed\n%s\nto\n%s", b1, b2)
		}
		if s2.State != s.State || s2.Timestamp != s.Timestamp || s2.WatcherPID != s.WatcherPID || s2.Host != s.Host || len(s2.Extra) != len(s.Extra) {
			t.Fatalf("round trip changed %+v to %+v", s, s2)
		}
	})
}

func ExampleStatus_Effective() {
	now := time.Date(2026, 1, 11, 16, 30, 0, 0, time.UTC)
	s := Status{AgentID: "codex", Timestamp: "2026-01-11T16:29:55.000Z", State: StateAwake, Substate: SubWorking, WatcherPID: 12345, Host: "vm-2"}
	dead := func(pid int) bool { return false }
	fmt.Println(s.Effective(now, DefaultStaleAfter, "vm-1", dead)) // another host's PID is not checked
	fmt.Println(s.Effective(now, DefaultStaleAfter, "vm-2", dead)) // this host's dead PID is stale at once
	fmt.Println(s.Effective(now.Add(2*time.Minute), DefaultStaleAfter, "vm-1", dead))
	// Output:
	// AWAKE/WORKING
	// STALE
	// STALE
}

// TestReadRetriesShortRead: a heartbeat seen half-written (a foreign writer
// rewriting it in place, or a stale NFS attribute cache) is read again, and
// the whole one is returned; a file that stays broken is ErrMalformed.
//
// It runs in a synctest bubble: the writer finishes halfway through the
// first pause, on the bubble's fake clock, so the reread that sees the
// whole file is always the first one, and no pause is waited for real.
func TestReadRetriesShortRead(t *testing.T) { synctest.Test(t, testReadRetriesShortRead) }

func testReadRetriesShortRead(t *testing.T) {
	root := tree.Root(t.TempDir())
	if err := Write(root, Status{AgentID: "codex", State: StateAwake, Substate: SubIdle}); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(root.Presence(), "codex.json")
	whole, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(rereads[0] / 2)
		done <- os.WriteFile(name, whole, 0o644) // the writer finishes in place
	}()
	start := time.Now()
	s, err := Read(root, "codex")
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil || s.State != StateAwake {
		t.Errorf("Read of a file completed in place = %+v, %v; want the whole heartbeat", s, err)
	}
	if took := time.Since(start); took != rereads[0] {
		t.Errorf("Read of a file completed in place took %v, want one pause, %v", took, rereads[0])
	}

	if err := os.WriteFile(name, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := Read(root, "codex"); !errors.Is(err, ErrMalformed) {
		t.Errorf("Read of a file that stays broken: %v, want ErrMalformed", err)
	}
	var all time.Duration
	for _, d := range rereads {
		all += d
	}
	if took := time.Since(start); took != all {
		t.Errorf("Read of a file that stays broken took %v, want every pause, %v", took, all)
	}
}
