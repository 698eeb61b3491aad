package doccheck

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestExamples runs the shell examples of README.md and docs/*.md that
// are not marked as not run, each file's in order in a fresh tree, with
// collab built from this checkout first on PATH; and it checks that every
// collab command in every example, run or not, names a command and only
// flags that command's --help lists.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab")
	}
	root := filepath.Join("..", "..", "..")
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "collab"), "./cmd/collab")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	h := &helps{bin: filepath.Join(bin, "collab"), text: map[string]string{}}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		blocks := Blocks(string(data))
		for _, b := range blocks {
			for _, c := range Invocations(b.Text) {
				if why := h.check(c); why != "" {
					t.Errorf("%s:%d: collab %s: %s", f, b.Line, strings.Join(c.Words, " "), why)
				}
			}
		}
		t.Run(strings.ReplaceAll(f, "/", "_"), func(t *testing.T) { runBlocks(t, bin, blocks) })
	}
}

// runBlocks runs blocks (those not marked) in order, in one fresh tree.
func runBlocks(t *testing.T, bin string, blocks []Block) {
	dir := t.TempDir()
	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"COLLAB_ROOT=" + filepath.Join(dir, "tree"),
		"LANG=C.UTF-8",
	}
	ran := false
	for _, b := range blocks {
		if b.NotRun != "" {
			continue
		}
		if !ran {
			if out, err := sh(t, dir, env, "mkdir -p ../home && collab init && git init -q"); err != nil { // the examples run in a checkout
				t.Fatalf("collab init: %v\n%s", err, out)
			}
			ran = true
		}
		if out, err := sh(t, dir, env, b.Text); err != nil {
			t.Errorf("example at line %d: %v\n%s\n--- output:\n%s", b.Line, err, b.Text, out)
		}
	}
}

func sh(t *testing.T, dir string, env []string, script string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = filepath.Join(dir, "work")
	if err := os.MkdirAll(cmd.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// helps checks invocations against the commands' --help texts.
type helps struct {
	bin  string
	text map[string]string // "cmd" or "cmd sub" → help; "" when none
}

func (h *helps) help(words ...string) string {
	key := strings.Join(words, " ")
	if s, ok := h.text[key]; ok {
		return s
	}
	out, err := exec.Command(h.bin, append(slices.Clone(words), "--help")...).CombinedOutput()
	s := string(out)
	if err != nil || !strings.Contains(s, "Usage") {
		s = ""
	}
	h.text[key] = s
	return s
}

func (h *helps) check(c Invocation) string {
	if len(c.Words) == 0 || strings.HasPrefix(c.Words[0], "-") {
		return ""
	}
	text := h.help(c.Words[0])
	if text == "" {
		return "no such command"
	}
	if len(c.Words) > 1 && !strings.HasPrefix(c.Words[1], "-") {
		text += h.help(c.Words[0], c.Words[1])
	}
	for _, f := range c.Flags() {
		if !strings.Contains(text, f) {
			return f + " is not in its --help"
		}
	}
	return ""
}

func TestBlocks(t *testing.T) {
	text := strings.Join([]string{
		"<!-- not run: needs a shared mount -->",
		"",
		"```sh",
		"collab init --group g",
		"```",
		"Then:",
		"   ```sh",
		"   collab who",
		"   ```",
		"```json",
		"{}",
		"```",
	}, "\n")
	got := Blocks(text)
	want := []Block{{Line: 3, Text: "collab init --group g\n", NotRun: "needs a shared mount"}, {Line: 7, Text: "collab who\n"}}
	if !slices.Equal(got, want) {
		t.Errorf("Blocks = %+v, want %+v", got, want)
	}
}

func TestInvocations(t *testing.T) {
	script := "TOKEN=$(collab serve token new --person alice)\n" +
		"git diff --stat | collab doc write --channel dev x.md   # content from stdin\n" +
		"$ sudo -u admin collab key trust codex K && collab key list --json\n" +
		"collab send --to b 'a # not a comment' --text=x \\\n  --wait\n" +
		"echo collab --nope\n" +
		"collab join --agent ana -- --model m\n"
	var got []string
	for _, c := range Invocations(script) {
		got = append(got, strings.Join(c.Words, " ")+" ["+strings.Join(c.Flags(), ",")+"]")
	}
	want := []string{
		"serve token new --person alice [--person]",
		"doc write --channel dev x.md [--channel]",
		"key trust codex K []",
		"key list --json [--json]",
		"send --to b a # not a comment --text=x --wait [--to,--text,--wait]",
		"join --agent ana -- --model m [--agent]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Invocations:\n got %q\nwant %q", got, want)
	}
}

func FuzzInvocations(f *testing.F) {
	f.Add("collab send --to b 'x' | collab read $(collab who)")
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range Invocations(s) {
			for _, fl := range c.Flags() {
				if !strings.HasPrefix(fl, "--") || strings.Contains(fl, "=") {
					t.Fatalf("flag %q", fl)
				}
			}
		}
		Blocks(s)
	})
}
