package documents

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
)

func newFolder(t testing.TB, root string, opt Options) *Folder {
	t.Helper()
	f, err := New(tree.Root(root), "c", opt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCheckPath(t *testing.T) {
	tests := []struct {
		p  string
		ok bool
	}{
		{"notes.md", true},
		{"findings/auth-issues.md", true},
		{"a/b/c/d_e.F-1.txt", true},
		{"README", true},
		{"", false},
		{"/etc/passwd", false},
		{"../x", false},
		{"a/../../x", false},
		{"a/./b", false},
		{".", false},
		{"..", false},
		{"a//b", false},
		{"a/", false},
		{".hidden", false},
		{"a/.notes.md.lock", false},
		{"-rf", false},
		{"a b.md", false},
		{`a\b`, false},
		{"a\x00b", false},
		{"naïve.md", false},
		{strings.Repeat("a", MaxElemLen), true},
		{strings.Repeat("a", MaxElemLen+1), false},
		{strings.Repeat("a/", MaxDepth-1) + "a", true},
		{strings.Repeat("a/", MaxDepth) + "a", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.30q", tt.p), func(t *testing.T) {
			err := CheckPath(tt.p)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckPath(%q) = %v, want ok %v", tt.p, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadPath) {
				t.Errorf("error %v does not wrap ErrBadPath", err)
			}
		})
	}
}

func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"notes.md", "a/b.md", "../x", "/x", "a//b", ".x", "a/./b", "a\\b", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if CheckPath(p) != nil {
			return
		}
		// An accepted path stays inside the folder and names no dot-file.
		if !filepath.IsLocal(p) || path.Clean(p) != p || path.IsAbs(p) {
			t.Fatalf("accepted %q, which is not a clean local path", p)
		}
		for _, e := range strings.Split(p, "/") {
			if e == "" || e[0] == '.' || e[0] == '-' {
				t.Fatalf("accepted %q with element %q", p, e)
			}
		}
		if len(p) > MaxPathLen {
			t.Fatalf("accepted %d bytes", len(p))
		}
	})
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	f := newFolder(t, root, Options{})

	if _, err := f.Read(EntryPoint); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read before any document: %v, want ErrNotExist", err)
	}
	if got, err := f.List(); err != nil || len(got) != 0 {
		t.Fatalf("list of a missing folder = %v, %v", got, err)
	}
	v1, err := f.Create(ctx, EntryPoint, "# Notes\n")
	if err != nil {
		t.Fatal(err)
	}
	if v1 != Version("# Notes\n") {
		t.Errorf("create returned %s, want the content's version", v1)
	}
	if _, err := f.Create(ctx, EntryPoint, "other"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second create: %v, want ErrExist", err)
	}
	d, err := f.Read(EntryPoint)
	if err != nil {
		t.Fatal(err)
	}
	if d.Content != "# Notes\n" || d.Version != v1 || d.Size != 8 || d.File != EntryPoint {
		t.Errorf("read = %+v", d)
	}

	// A lost update is refused: B writes on top of the version A read.
	vB, err := f.Write(ctx, EntryPoint, "# Notes\nB was here\n", v1)
	if err != nil {
		t.Fatalf("write at the current version: %v", err)
	}
	if _, err := f.Write(ctx, EntryPoint, "# Notes\nA was here\n", v1); !errors.Is(err, ErrConflict) {
		t.Fatalf("write at an old version: %v, want ErrConflict", err)
	}
	if d, _ := f.Read(EntryPoint); d.Content != "# Notes\nB was here\n" || d.Version != vB {
		t.Errorf("after the refused write: %+v", d)
	}
	if _, err := f.Write(ctx, "missing.md", "x", v1); !errors.Is(err, ErrConflict) {
		t.Errorf("versioned write of a missing file: %v, want ErrConflict", err)
	}
	if _, err := f.Write(ctx, "findings/deep/perf.md", "slow\n", ""); err != nil {
		t.Fatal(err)
	}
	v, err := f.Append(ctx, "findings/deep/perf.md", "very slow\n")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := f.Read("findings/deep/perf.md"); d.Content != "slow\nvery slow\n" || d.Version != v {
		t.Errorf("after append: %+v (returned version %s)", d, v)
	}
	if _, err := f.Append(ctx, "todo.md", "- one\n"); err != nil {
		t.Fatalf("append creates: %v", err)
	}
	os.WriteFile(filepath.Join(f.Dir(), ".stray.tmp"), nil, 0o666)
	os.WriteFile(filepath.Join(f.Dir(), "bad name.md"), nil, 0o666)
	os.Symlink("notes.md", filepath.Join(f.Dir(), "link.md"))

	list, err := f.List()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range list {
		files = append(files, e.File)
	}
	if want := []string{"findings/deep/perf.md", "notes.md", "todo.md"}; !slices.Equal(files, want) {
		t.Errorf("list = %v, want %v", files, want)
	}

	if err := f.Delete(ctx, "todo.md", "sha256:0"); !errors.Is(err, ErrConflict) {
		t.Errorf("delete at a wrong version: %v", err)
	}
	if err := f.Delete(ctx, "todo.md", ""); err != nil {
		t.Fatal(err)
	}
	if err := f.Delete(ctx, "todo.md", ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("second delete: %v, want ErrNotExist", err)
	}
	if err := f.Delete(ctx, "findings", ""); err == nil {
		t.Error("deleting a folder succeeded")
	}
	// No lock or temp file is left behind.
	for _, name := range []string{".notes.md.lock", ".todo.md.lock", "findings/deep/.perf.md.lock"} {
		if _, err := os.Lstat(filepath.Join(f.Dir(), name)); err == nil {
			t.Errorf("%s left behind", name)
		}
	}
}

func TestEscapesRefused(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.md")
	os.WriteFile(secret, []byte("secret"), 0o666)
	f := newFolder(t, root, Options{})
	if _, err := f.Create(ctx, EntryPoint, "notes"); err != nil {
		t.Fatal(err)
	}
	must(t, os.Symlink(secret, filepath.Join(f.Dir(), "evil.md")))
	must(t, os.Symlink(outside, filepath.Join(f.Dir(), "out")))
	must(t, os.Symlink("../../../"+filepath.Base(outside), filepath.Join(f.Dir(), "rel")))
	must(t, os.Symlink("notes.md", filepath.Join(f.Dir(), "alias.md"))) // inside: refused too (TestLinkInsideRefused)

	for _, p := range []string{"../x.md", "/etc/passwd", secret, "a/../../x.md", "evil.md", "out/secret.md", "out/new.md", "rel/secret.md"} {
		t.Run(p, func(t *testing.T) {
			if d, err := f.Read(p); err == nil {
				t.Errorf("read %s = %q", p, d.Content)
			}
			if _, err := f.Write(ctx, p, "pwned", ""); err == nil {
				t.Errorf("write %s succeeded", p)
			}
			if _, err := f.Append(ctx, p, "pwned"); err == nil {
				t.Errorf("append %s succeeded", p)
			}
			if _, err := f.Create(ctx, p, "pwned"); err == nil {
				t.Errorf("create %s succeeded", p)
			}
			if err := f.Delete(ctx, p, ""); err == nil {
				t.Errorf("delete %s succeeded", p)
			}
		})
	}
	if data, _ := os.ReadFile(secret); string(data) != "secret" {
		t.Errorf("secret is now %q", data)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside folder holds %d entries, want 1", len(ents))
	}
	if d, err := f.Read("alias.md"); !errors.Is(err, ErrSymlink) {
		t.Errorf("symlink inside the folder: %+v, %v; want ErrSymlink", d, err)
	}
}

// TestLinkInsideRefused: a symbolic link inside the folder, to a file or
// to a folder, is refused by read, write, append, create and delete alike;
// the link and its target are left as they were.
func TestLinkInsideRefused(t *testing.T) {
	ctx := context.Background()
	f := newFolder(t, t.TempDir(), Options{})
	if _, err := f.Create(ctx, "sub/notes.md", "notes"); err != nil {
		t.Fatal(err)
	}
	must(t, os.Symlink("sub/notes.md", filepath.Join(f.Dir(), "alias.md")))
	must(t, os.Symlink("sub", filepath.Join(f.Dir(), "dir")))
	for _, p := range []string{"alias.md", "dir/notes.md", "dir/new.md"} {
		t.Run(p, func(t *testing.T) {
			if d, err := f.Read(p); !errors.Is(err, ErrSymlink) {
				t.Errorf("read %s = %+v, %v; want ErrSymlink", p, d, err)
			}
			if _, err := f.Write(ctx, p, "replaced", ""); !errors.Is(err, ErrSymlink) {
				t.Errorf("write %s: %v; want ErrSymlink", p, err)
			}
			if _, err := f.Append(ctx, p, "more"); !errors.Is(err, ErrSymlink) {
				t.Errorf("append %s: %v; want ErrSymlink", p, err)
			}
			if _, err := f.Create(ctx, p, "new"); !errors.Is(err, ErrSymlink) {
				t.Errorf("create %s: %v; want ErrSymlink", p, err)
			}
			if err := f.Delete(ctx, p, ""); !errors.Is(err, ErrSymlink) {
				t.Errorf("delete %s: %v; want ErrSymlink", p, err)
			}
		})
	}
	if fi, err := os.Lstat(filepath.Join(f.Dir(), "alias.md")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("alias.md is no longer a link: %v, %v", fi, err)
	}
	if d, err := f.Read("sub/notes.md"); err != nil || d.Content != "notes" {
		t.Errorf("the target: %+v, %v", d, err)
	}
	if _, err := os.Lstat(filepath.Join(f.Dir(), "sub", "new.md")); err == nil {
		t.Error("create through the folder link made sub/new.md")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestStaleLockTakenOver(t *testing.T) {
	ctx := context.Background()
	f := newFolder(t, t.TempDir(), Options{LockWait: time.Millisecond})
	if _, err := f.Create(ctx, EntryPoint, "a\n"); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(f.Dir(), ".notes.md.lock")

	// A live lock (just made): the writer gives up, nothing is written.
	must(t, os.WriteFile(lock, []byte(`{"token":"live","host":"h2","pid":7}`), 0o666))
	if _, err := f.Append(ctx, EntryPoint, "b\n"); !errors.Is(err, ErrLockBusy) || !strings.Contains(err.Error(), "h2 pid 7") {
		t.Fatalf("append under a live lock: %v, want ErrLockBusy naming the holder", err)
	}
	// The same lock, an hour old on the file server's clock: taken over.
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(lock, old, old))
	if _, err := f.Append(ctx, EntryPoint, "b\n"); err != nil {
		t.Fatalf("append after a crashed writer: %v", err)
	}
	if d, _ := f.Read(EntryPoint); d.Content != "a\nb\n" {
		t.Errorf("content %q", d.Content)
	}
	if _, err := os.Lstat(lock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock left behind: %v", err)
	}
	// An unreadable, garbled stale lock is taken over as well.
	must(t, os.WriteFile(lock, []byte("garbage"), 0o666))
	must(t, os.Chtimes(lock, old, old))
	if _, err := f.Write(ctx, EntryPoint, "c\n", ""); err != nil {
		t.Fatalf("write after a garbled lock: %v", err)
	}
}

func TestTakeOverGivesBackAFreshLock(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	must(t, os.WriteFile(filepath.Join(dir, ".x.lock"), []byte(`{"token":"fresh"}`), 0o666))
	// A waiter judged token "dead" stale, but by the time it moves the lock
	// a new writer holds it: the new lock must survive.
	takeOver(r, ".x.lock", "dead")
	if got, _, err := readLock(r, ".x.lock"); err != nil || got.Token != "fresh" {
		t.Fatalf("lock after a mistaken takeover: %+v, %v", got, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left, want only the lock", len(ents))
	}
	takeOver(r, ".x.lock", "fresh")
	if _, err := os.Lstat(filepath.Join(dir, ".x.lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale lock not removed: %v", err)
	}
}

func TestLockLostWritesNothing(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f := newFolder(t, t.TempDir(), Options{})
	l, err := f.lock(context.Background(), r, "x.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.verify(); err != nil {
		t.Fatalf("fresh lock: %v", err)
	}
	// Another host judged it stale and took it.
	must(t, os.Remove(filepath.Join(dir, ".x.md.lock")))
	must(t, os.WriteFile(filepath.Join(dir, ".x.md.lock"), []byte(`{"token":"other"}`), 0o666))
	if err := l.verify(); !errors.Is(err, ErrLockLost) {
		t.Errorf("verify after takeover: %v, want ErrLockLost", err)
	}
	l.unlock()
	if got, _, _ := readLock(r, ".x.md.lock"); got.Token != "other" {
		t.Errorf("unlock removed another writer's lock (now %+v)", got)
	}
}

// TestConcurrentAppendersTwoHosts appends from two bindfs mounts of one
// folder (two NFS clients) at once: every line arrives exactly once.
func TestConcurrentAppendersTwoHosts(t *testing.T) {
	backing := t.TempDir()
	hosts := []string{bindfstest.Mount(t, backing), bindfstest.Mount(t, backing)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	const writers, lines = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, len(hosts)*writers)
	for h, host := range hosts {
		f := newFolder(t, host, Options{Host: fmt.Sprintf("host%d", h)})
		for w := range writers {
			wg.Go(func() {
				for i := range lines {
					if _, err := f.Append(ctx, "log/appends.md", fmt.Sprintf("h%d-w%d-%d\n", h, w, i)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(backing, "docs", "c", "log", "appends.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	count := make(map[string]int)
	for _, l := range got {
		count[l]++
	}
	for h := range hosts {
		for w := range writers {
			for i := range lines {
				if l := fmt.Sprintf("h%d-w%d-%d", h, w, i); count[l] != 1 {
					t.Errorf("line %s appears %d times", l, count[l])
				}
			}
		}
	}
	if want := len(hosts) * writers * lines; len(got) != want {
		t.Errorf("%d lines, want %d", len(got), want)
	}
	ents, _ := os.ReadDir(filepath.Join(backing, "docs", "c", "log"))
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("files left next to the document: %v", names)
	}
}

func TestVersionConflictAcrossHosts(t *testing.T) {
	ctx := context.Background()
	backing := t.TempDir()
	a := newFolder(t, bindfstest.Mount(t, backing), Options{})
	b := newFolder(t, bindfstest.Mount(t, backing), Options{})
	if _, err := a.Create(ctx, EntryPoint, "v0\n"); err != nil {
		t.Fatal(err)
	}
	da, err := a.Read(EntryPoint)
	if err != nil {
		t.Fatal(err)
	}
	db, err := b.Read(EntryPoint)
	if err != nil {
		t.Fatal(err)
	}
	if da.Version != db.Version {
		t.Fatalf("hosts disagree on the version: %s, %s", da.Version, db.Version)
	}
	if _, err := b.Write(ctx, EntryPoint, "b\n", db.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(ctx, EntryPoint, "a\n", da.Version); !errors.Is(err, ErrConflict) {
		t.Fatalf("host A overwrote host B's change: %v", err)
	}
}

// TestNeverWorldWritable: documents, their folders and lock files are made
// through the shared-tree permissions, whatever the umask.
func TestNeverWorldWritable(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := t.TempDir()
	f := newFolder(t, root, Options{})
	ctx := context.Background()
	if _, err := f.Create(ctx, "plans/q1.md", "hello\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Append(ctx, "notes.md", "a line\n"); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if p != root && fi.Mode().Perm()&0o002 != 0 {
			t.Errorf("%s: mode %v is world-writable", p, fi.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSweepLeftovers: a change to a document removes the temp and lock
// files crashed writers left in its folder once they are 36 hours old,
// and nothing younger or of another kind.
func TestSweepLeftovers(t *testing.T) {
	root := t.TempDir()
	f := newFolder(t, root, Options{})
	ctx := context.Background()
	if _, err := f.Create(ctx, "plans/q1.md", "v1\n"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tree.Root(root).Docs("c"), "plans")
	now := time.Now()
	files := map[string]struct {
		age  time.Duration
		gone bool
	}{
		".q1.md.ab12.tmp":      {40 * time.Hour, true},
		".q1.md.lock.0123abcd": {40 * time.Hour, true},
		".q2.md.cd34.tmp":      {time.Hour, false},
		".q1.md.lock.young":    {time.Minute, false},
		"old.md":               {40 * time.Hour, false},
		".hidden-note":         {40 * time.Hour, false},
	}
	for name, c := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, now.Add(-c.age), now.Add(-c.age))
	}
	if _, err := f.Append(ctx, "plans/q1.md", "v2\n"); err != nil {
		t.Fatal(err)
	}
	for name, c := range files {
		_, err := os.Lstat(filepath.Join(dir, name))
		if gone := errors.Is(err, fs.ErrNotExist); gone != c.gone {
			t.Errorf("%s (age %v): gone = %v, want %v", name, c.age, gone, c.gone)
		}
	}
}

// TestLinkedFolderRefused: ROOT/docs or ROOT/docs/CHANNEL replaced by a
// symbolic link to a folder outside the tree is refused by every call, and
// nothing is read from or written there.
func TestLinkedFolderRefused(t *testing.T) {
	ctx := context.Background()
	for _, link := range []string{"docs", "docs/c"} {
		t.Run(link, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(link)), 0o755))
			must(t, os.Symlink(outside, filepath.Join(root, link)))
			must(t, os.MkdirAll(filepath.Join(outside, "c"), 0o755))
			must(t, os.WriteFile(filepath.Join(outside, "c", EntryPoint), []byte("outside"), 0o644))
			must(t, os.WriteFile(filepath.Join(outside, EntryPoint), []byte("outside"), 0o644))
			f := newFolder(t, root, Options{})
			if d, err := f.Read(EntryPoint); err == nil {
				t.Errorf("read through the link = %q", d.Content)
			}
			if ents, err := f.List(); err == nil {
				t.Errorf("list through the link = %v", ents)
			}
			if _, err := f.Write(ctx, "new.md", "pwned", ""); err == nil {
				t.Error("write through the link succeeded")
			}
			if _, err := f.Append(ctx, EntryPoint, "pwned"); err == nil {
				t.Error("append through the link succeeded")
			}
			if err := f.Delete(ctx, EntryPoint, ""); err == nil {
				t.Error("delete through the link succeeded")
			}
			var got []string
			filepath.WalkDir(outside, func(p string, d fs.DirEntry, err error) error {
				got = append(got, p)
				return nil
			})
			want := []string{outside, filepath.Join(outside, "c"), filepath.Join(outside, "c", EntryPoint), filepath.Join(outside, EntryPoint)}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("outside holds %v, want %v", got, want)
			}
			for _, p := range []string{filepath.Join(outside, "c", EntryPoint), filepath.Join(outside, EntryPoint)} {
				if data, _ := os.ReadFile(p); string(data) != "outside" {
					t.Errorf("%s is now %q", p, data)
				}
			}
		})
	}
}

// TestSentinelPrefix: every sentinel error names the package, as every
// package's do ("tree: …"), whatever wraps it.
func TestSentinelPrefix(t *testing.T) {
	for _, err := range []error{ErrBadPath, ErrConflict, ErrTooLarge, ErrNotRegular, ErrLockBusy, ErrLockLost, ErrSymlink} {
		if !strings.HasPrefix(err.Error(), "documents: ") {
			t.Errorf("%q does not start with %q", err, "documents: ")
		}
	}
}
