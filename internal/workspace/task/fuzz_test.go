package task_test

import (
	"encoding/json"
	"testing"

	"github.com/collabdev/collab/internal/workspace/task"
)

func FuzzDecodeTask(f *testing.F) {
	f.Add([]byte(`{"id":"t1","channel":"dev","title":"x","created_by":"lead","created":"2026-01-11T16:00:00Z"}`), "t1")
	f.Add([]byte(`{"title":"x","depends":["t1","t1"],"created_by":"lead"}`), "t2")
	f.Add([]byte(`{"id":"t3","title":"","created_by":"lead"}`), "t3")
	f.Add([]byte(`[]`), "t1")
	f.Fuzz(func(t *testing.T, data []byte, id string) {
		tk, err := task.DecodeTask(data, id)
		if err != nil {
			return
		}
		// What decodes is a valid task: its id, title and dependencies.
		if tk.ID != id || tk.Status != task.Pending {
			t.Fatalf("decoded %+v for id %q", tk, id)
		}
		if _, err := task.ParseID(tk.ID); err != nil {
			t.Fatalf("decoded a task with id %q: %v", tk.ID, err)
		}
		for _, d := range tk.Depends {
			if _, err := task.ParseID(d); err != nil || d == tk.ID {
				t.Fatalf("decoded dependency %q of %s", d, tk.ID)
			}
		}
		if tk.Title == "" || len(tk.Title) > task.MaxTitle {
			t.Fatalf("decoded title %q", tk.Title)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"seq":1,"event":"claimed","status":"claimed","owner":"codex","agent":"codex","time":"2026-01-11T16:00:00Z"}`), 1)
	f.Add([]byte(`{"seq":2,"event":"released","status":"pending","agent":"collab","note":"gone"}`), 2)
	f.Add([]byte(`{"seq":3,"event":"done","status":"claimed","agent":"x"}`), 3)
	f.Add([]byte(`null`), 1)
	f.Add([]byte(`{"seq":4,"event":"retried","status":"pending","agent":"lead","note":"again"}`), 4)
	f.Add([]byte(`{"seq":5,"event":"checkpoint","status":"claimed","owner":"x","agent":"x","summary":"s","type":"decision","detail":{ "b": [1, 2.50], "a": "<&>" }}`), 5)
	f.Add([]byte(`{"seq":6,"event":"done","status":"done","agent":"x","outcome":"o","detail":{"files":["a"]}}`), 6)
	f.Add([]byte(`{"seq":7,"event":"failed","status":"failed","agent":"x","error":"e","detail":{}}`), 7)
	f.Fuzz(func(t *testing.T, data []byte, seq int) {
		e, err := task.DecodeEvent(data, seq)
		if err != nil {
			return
		}
		if e.Seq != seq {
			t.Fatalf("seq %d decoded from a file numbered %d", e.Seq, seq)
		}
		if (e.Status == task.Claimed) != (e.Owner != "") {
			t.Fatalf("status %s with owner %q", e.Status, e.Owner)
		}
		// A detail is only a checkpoint's or a done event's, canonical.
		if len(e.Detail) > 0 {
			if e.Event != task.EvCheckpoint && e.Event != task.EvDone {
				t.Fatalf("a %s event with detail %s", e.Event, e.Detail)
			}
			if c, err := task.ParseDetail([]byte(e.Detail.String())); err != nil || c.String() != e.Detail.String() {
				t.Fatalf("detail %s is not stable: %s, %v", e.Detail, c, err)
			}
		}
		// It survives a round trip, as written on disk (indented), with
		// the payload its signature covers.
		out, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		back, err := task.DecodeEvent(out, seq)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		if string(back.Payload("dev", "t1")) != string(e.Payload("dev", "t1")) {
			t.Fatalf("payload changed by a round trip of %s", out)
		}
	})
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"t1", "t0", "t01", "t999999999", "t1000000000", "x1", "t", "t-1", "t1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := task.ParseID(s)
		if err != nil {
			return
		}
		if n < 1 || task.FormatID(n) != s {
			t.Fatalf("ParseID(%q) = %d, which formats as %q", s, n, task.FormatID(n))
		}
	})
}

func FuzzParseDetail(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"b":[1,2.50],"a":"<&>"} `, `[]`, `null`, `{"a":1}{}`, `{"a":1e999}`, `"x"`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := task.ParseDetail(data)
		if err != nil || d == nil {
			return
		}
		s := d.String()
		if len(s) > task.MaxDetail || !json.Valid([]byte(s)) || s[0] != '{' {
			t.Fatalf("ParseDetail(%q) = %s", data, s)
		}
		again, err := task.ParseDetail([]byte(s))
		if err != nil || again.String() != s {
			t.Fatalf("not idempotent: %s then %s, %v", d, again, err)
		}
	})
}
