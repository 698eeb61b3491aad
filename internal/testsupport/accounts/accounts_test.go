package accounts

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestAccounts(t *testing.T) {
	s := Require(t)
	if got := strings.TrimSpace(s.Agent.Run(t, nil, "id", "-u")); got != strconv.Itoa(s.Agent.UID) {
		t.Fatalf("id -u as agent = %s, want %d", got, s.Agent.UID)
	}
	// umask 002 and the shared group: a folder Admin owns in the group is
	// writable by Agent only once it is group-writable.
	root := s.Folder(t, s.Admin, "root")
	if _, _, err := s.Agent.Try(nil, "touch", filepath.Join(root, "x")); err == nil {
		t.Fatal("agent wrote into admin's 0755 folder")
	}
	if err := os.Chmod(root, 0o775); err != nil {
		t.Fatal(err)
	}
	s.Agent.Run(t, nil, "touch", filepath.Join(root, "x"))
	fi, err := os.Stat(filepath.Join(root, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o664 {
		t.Errorf("mode under umask 002 = %v, want 0664", fi.Mode().Perm())
	}
	exe := s.Executable(t, "/bin/true")
	s.Mallory.Run(t, nil, exe)
}
