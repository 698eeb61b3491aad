package presence

import (
	"fmt"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/identity/signing"
)

// TestLiveSigned: the live field round-trips and is signed; a heartbeat
// with live but neither backlog nor instance signs their empty values
// before it.
func TestLiveSigned(t *testing.T) {
	root, alice, v := signedSetup(t)
	s := Status{AgentID: "alice", Timestamp: at(0), State: StateAwake, Substate: SubIdle, Channel: "dev", Host: "vm-1",
		Live: &Live{Sessions: 2, Max: 4, RSSBytes: 300 << 20, Processes: []LiveProcess{
			{Key: "dev", PID: 41, RSSBytes: 200 << 20}, {Key: "dev/0190", PID: 42, RSSBytes: 100 << 20}}}}
	want := signing.Payload(Kind, "alice", s.Timestamp, s.State, s.Substate, "0", "dev", "vm-1", "", "", "", "", "0", "{}",
		"0", "", "", "2", "4", fmt.Sprint(300<<20), "2", "dev", "41", fmt.Sprint(200<<20), "dev/0190", "42", fmt.Sprint(100<<20))
	if got := s.Payload("alice"); string(got) != string(want) {
		t.Errorf("payload:\n got %q\nwant %q", got, want)
	}
	s.Sign(alice)
	if err := Write(root, s); err != nil {
		t.Fatal(err)
	}
	got, err := Read(root, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got.Live == nil || got.Live.Sessions != 2 || got.Live.Max != 4 || got.Live.RSSBytes != 300<<20 ||
		len(got.Live.Processes) != 2 || got.Live.Processes[1] != s.Live.Processes[1] {
		t.Fatalf("read back live %+v, want %+v", got.Live, s.Live)
	}
	if verdict := got.Verify(v, "alice"); verdict != signing.Verified {
		t.Errorf("verdict %v, want verified", verdict)
	}
	for name, edit := range map[string]func(*Live){
		"sessions":    func(l *Live) { l.Sessions = 1 },
		"max":         func(l *Live) { l.Max = 8 },
		"rss":         func(l *Live) { l.RSSBytes = 1 },
		"process rss": func(l *Live) { l.Processes[0].RSSBytes = 1 },
		"process key": func(l *Live) { l.Processes[0].Key = "ops" },
		"process pid": func(l *Live) { l.Processes[1].PID = 1 },
		"dropped":     func(l *Live) { l.Processes = l.Processes[:1] },
	} {
		f := got
		l := *got.Live
		l.Processes = append([]LiveProcess(nil), l.Processes...)
		edit(&l)
		f.Live = &l
		if verdict := f.Verify(v, "alice"); verdict != signing.BadSignature {
			t.Errorf("%s changed: verdict %v, want %v", name, verdict, signing.BadSignature)
		}
	}
	f := got
	f.Live = nil
	if verdict := f.Verify(v, "alice"); verdict != signing.BadSignature {
		t.Errorf("live removed: verdict %v, want %v", verdict, signing.BadSignature)
	}
}

func TestLiveTrim(t *testing.T) {
	l := Live{}
	for i := range MaxLiveProcesses + 8 {
		l.Processes = append(l.Processes, LiveProcess{Key: fmt.Sprintf("k%03d", i), PID: 100 + i, RSSBytes: int64(i % 5)})
	}
	l.Trim()
	if len(l.Processes) != MaxLiveProcesses {
		t.Fatalf("%d processes, want %d", len(l.Processes), MaxLiveProcesses)
	}
	for i := 1; i < len(l.Processes); i++ {
		a, b := l.Processes[i-1], l.Processes[i]
		if a.RSSBytes < b.RSSBytes || (a.RSSBytes == b.RSSBytes && a.Key > b.Key) {
			t.Fatalf("not the largest first, then by key: %+v before %+v", a, b)
		}
	}
	if l.Processes[0].RSSBytes != 4 {
		t.Errorf("first %+v, want one of the largest", l.Processes[0])
	}
	// The longest keys a watcher makes (a channel and a thread) at the
	// most processes listed stay well under MaxSize.
	for i := range l.Processes {
		l.Processes[i].Key = strings.Repeat("c", 64) + "/" + strings.Repeat("t", 64)
	}
	b, err := Status{AgentID: "a", State: StateAwake, Live: &l}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxSize/4 {
		t.Errorf("a heartbeat listing %d processes is %d bytes", len(l.Processes), len(b))
	}
}
