package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/testsupport/syncbuf"
)

// result is what one run of the command printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// runCollab runs the command line in-process with the given environment,
// for a user whose login name is unknown.
func runCollab(t testing.TB, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	return runCollabCtx(t, context.Background(), env, stdin, args...)
}

// runCollabAs is runCollab for a user with this login name.
func runCollabAs(t testing.TB, login string, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	return runCollabCtx(t, withLogin(context.Background(), func() string { return login }), env, stdin, args...)
}

func runCollabCtx(t testing.TB, ctx context.Context, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(stdin), &out, &errb)
	code := exitCode(err, &errb)
	return result{out.String(), errb.String(), code}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer = syncbuf.Buffer

// filesUnder lists every file and folder under dir, relative to it.
// filesUnder lists what is under dir but the empty channels/ folder a
// tree made by newTree has.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if p == filepath.Join(dir, "channels") {
			if ents, _ := os.ReadDir(p); len(ents) == 0 {
				return nil
			}
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, rel)
		}
		return nil
	})
	return got
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"none", nil, 2, "Commands:"},
		{"help", []string{"help"}, 0, "Commands:"},
		{"unknown", []string{"frobnicate"}, 2, "unknown command"},
		{"bad flag", []string{"send", "--nope"}, 2, "unknown flag"},
		{"command help", []string{"send", "--help"}, 0, "Usage: collab send"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCollab(t, nil, "", tt.args...)
			if r.code != tt.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Errorf("output %q does not contain %q", r.stdout+r.stderr, tt.want)
			}
		})
	}
}

var _ io.Writer = (*syncBuffer)(nil)

// TestSubcommandDispatch: every command that needs a subcommand answers
// alike (subcommands): none is its help on stderr and exit 2, -h its help
// on stdout, an unknown one a usage error that names it.
func TestSubcommandDispatch(t *testing.T) {
	for _, cmd := range []string{"task", "key", "agent", "nats"} {
		t.Run(cmd, func(t *testing.T) {
			help := helpText(cmd)
			if r := runCollab(t, nil, "", cmd); r.code != exitUsage || r.stderr != help || r.stdout != "" {
				t.Errorf("collab %s: exit %d, stderr %q; want 2 and its help", cmd, r.code, r.stderr)
			}
			if r := runCollab(t, nil, "", cmd, "-h"); r.code != 0 || r.stdout != help {
				t.Errorf("collab %s -h: exit %d, stdout %q; want 0 and its help", cmd, r.code, r.stdout)
			}
			want := "collab: " + cmd + `: unknown command "frob"; run 'collab ` + cmd + " --help'\n"
			if r := runCollab(t, nil, "", cmd, "frob"); r.code != exitUsage || r.stderr != want {
				t.Errorf("collab %s frob: exit %d, stderr %q; want 2 and %q", cmd, r.code, r.stderr, want)
			}
		})
	}
}
