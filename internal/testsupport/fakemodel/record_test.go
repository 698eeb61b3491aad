package fakemodel_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// fixtureRoot replaces the test's temporary folder in recorded output,
// and fixturePort the server's port, so that re-recording changes only
// what the CLIs changed (and ids, times, durations).
const (
	fixtureRoot = "/tmp/fixture"
	fixturePort = "PORT"
)

// meta is the sidecar NAME.meta.json of a fixture.
type meta struct {
	CLI     string   `json:"cli"`
	Version string   `json:"version"`
	About   string   `json:"about"`
	Argv    []string `json:"argv"`   // the program by name; the prompt as given
	Stdin   string   `json:"stdin"`  // always /dev/null
	Exit    int      `json:"exit"`   // exit status; -1 when killed by a signal
	Stdout  string   `json:"stdout"` // the file holding standard output
	Stderr  string   `json:"stderr"` // the file holding standard error; "" when empty
}

func writeFixture(t *testing.T, sc scenario, r run, version string) {
	t.Helper()
	base := sc.cli + "-" + sc.name
	norm := normaliser(r)
	m := meta{
		CLI: sc.cli, Version: version, About: sc.about,
		Argv:  append([]string{sc.cli}, r.args...),
		Stdin: "/dev/null", Exit: r.res.ExitCode,
		Stdout: base + sc.ext,
	}
	for i, a := range m.Argv {
		m.Argv[i] = norm(a)
	}
	if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
		t.Fatal(err)
	}
	stderrName := filepath.Join(fixtureDir, base+".stderr")
	if r.stderr != "" {
		m.Stderr = base + ".stderr"
		write(t, stderrName, norm(r.stderr))
	} else if err := os.Remove(stderrName); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	write(t, filepath.Join(fixtureDir, m.Stdout), norm(r.stdout))
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(fixtureDir, base+".meta.json"), string(b)+"\n")
}

// normaliser returns a function that puts fixtureRoot and fixturePort in
// place of the run's temporary folder and port, in paths and in the
// dashed form Claude Code names its project folders by.
func normaliser(r run) func(string) string {
	root := filepath.Dir(r.cli.Home)
	port := strings.TrimPrefix(r.srv.URL(), "http://127.0.0.1:")
	rep := strings.NewReplacer(
		root, fixtureRoot,
		strings.ReplaceAll(root, "/", "-"), strings.ReplaceAll(fixtureRoot, "/", "-"),
		"127.0.0.1:"+port, "127.0.0.1:"+fixturePort,
	)
	return rep.Replace
}

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cliVersion asks the CLI for its version.
func cliVersion(t *testing.T, name string) string {
	t.Helper()
	c := fakemodel.Start(t).CLI(t, name)
	res, err := c.Run(context.Background(), 30*time.Second, "--version")
	if err != nil {
		t.Fatalf("%s --version: %v", name, err)
	}
	return strings.TrimSpace(string(res.Stdout))
}
