package channel_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
)

func TestFileArtifact(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "report.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	const sum = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
	for _, p := range []string{file, link} {
		a, err := channel.FileArtifact(p)
		if err != nil || a.Path != p || a.Size == nil || *a.Size != 6 || a.SHA256 != sum {
			t.Errorf("FileArtifact(%s) = %+v, %v", p, a, err)
		}
		if err := a.Check(); err != nil {
			t.Errorf("Check(%+v): %v", a, err)
		}
	}
	t.Chdir(dir)
	if a, err := channel.FileArtifact("report.txt"); err != nil || a.Path != file {
		t.Errorf("relative path: %+v, %v; want %s", a, err, file)
	}
	for _, p := range []string{filepath.Join(dir, "missing"), dir, os.DevNull} {
		if a, err := channel.FileArtifact(p); !errors.Is(err, channel.ErrArtifact) {
			t.Errorf("FileArtifact(%s) = %+v, %v; want ErrArtifact", p, a, err)
		}
	}
}

func TestArtifactCheck(t *testing.T) {
	n, neg := int64(3), int64(-1)
	sum := strings.Repeat("ab", 32)
	for _, tt := range []struct {
		name string
		a    channel.Artifact
		ok   bool
	}{
		{"good", channel.Artifact{Path: "/a/b", Size: &n, SHA256: sum}, true},
		{"relative", channel.Artifact{Path: "a/b", Size: &n, SHA256: sum}, false},
		{"unclean", channel.Artifact{Path: "/a/../b", Size: &n, SHA256: sum}, false},
		{"control", channel.Artifact{Path: "/a\nb", Size: &n, SHA256: sum}, false},
		{"no size", channel.Artifact{Path: "/a", SHA256: sum}, false},
		{"negative size", channel.Artifact{Path: "/a", Size: &neg, SHA256: sum}, false},
		{"short sum", channel.Artifact{Path: "/a", Size: &n, SHA256: "abcd"}, false},
		{"upper sum", channel.Artifact{Path: "/a", Size: &n, SHA256: strings.ToUpper(sum)}, false},
		{"not hex", channel.Artifact{Path: "/a", Size: &n, SHA256: strings.Repeat("zz", 32)}, false},
	} {
		if err := tt.a.Check(); (err == nil) != tt.ok {
			t.Errorf("%s: Check = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

// Another writer's artifacts are shown whatever their shape.
func TestArtifactList(t *testing.T) {
	data := `{"from":"x","content":{"text":"t","artifacts":[
		{"path":"/a","size":3,"sha256":"abc"}, "notes.md", {"file":"b.txt"}, {"url":"https://x/y","size":-2},
		null, 42, {"other":1}]}}`
	m, err := channel.Decode([]byte(data), "", "c")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range m.Content.ArtifactList() {
		got = append(got, a.String())
	}
	want := []string{"/a (3 bytes, sha256 abc)", "notes.md", "b.txt", "https://x/y", "42", `{"other":1}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ArtifactList = %q\nwant %q", got, want)
	}
}

// SetArtifacts writes what ArtifactList reads back, and the signature
// covers it.
func TestSetArtifactsRoundTrip(t *testing.T) {
	n := int64(7)
	in := []channel.Artifact{{Path: "/x/y", Size: &n, SHA256: strings.Repeat("0", 64)}}
	var c channel.Content
	if err := c.SetArtifacts(in); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back channel.Content
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	out := back.ArtifactList()
	if len(out) != 1 || out[0].Path != "/x/y" || *out[0].Size != 7 || out[0].SHA256 != in[0].SHA256 {
		t.Errorf("round trip %s = %+v", data, out)
	}
}

func FuzzArtifactList(f *testing.F) {
	for _, s := range []string{`{"path":"/a","size":1,"sha256":"ab"}`, `"x"`, `null`, `[1,2]`, `{"size":"2"}`, `{"name":7}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		c := channel.Content{Artifacts: []json.RawMessage{json.RawMessage(raw)}}
		for _, a := range c.ArtifactList() {
			_ = a.String()
			if a.Size != nil && *a.Size < 0 {
				t.Errorf("%s: negative size %d", raw, *a.Size)
			}
		}
	})
}
