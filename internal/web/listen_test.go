package web

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestSignInOnSignal: each signal announces a fresh URL on the base, and
// the one before stops working; an announcement that fails ends the loop
// with its error; an ended context ends it quietly.
func TestSignInOnSignal(t *testing.T) {
	srv, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	first := srv.SignInPath()
	hup := make(chan os.Signal, 1)
	hup <- syscall.SIGHUP
	var got []SignIn
	ctx, cancel := context.WithCancel(context.Background())
	err = srv.SignInOnSignal(ctx, hup, "http://h:1", func(si SignIn) error {
		got = append(got, si)
		cancel()
		return nil
	})
	if err != nil || len(got) != 1 || !got[0].Fresh || !strings.HasPrefix(got[0].URL, "http://h:1/signin?token=") || got[0].URL == "http://h:1"+first {
		t.Fatalf("SignInOnSignal = %v, %+v", err, got)
	}
	hup <- syscall.SIGHUP
	if err := srv.SignInOnSignal(context.Background(), hup, "http://h:1", func(SignIn) error { return syscall.EIO }); !errors.Is(err, syscall.EIO) {
		t.Errorf("a failed announcement: %v", err)
	}
}

// TestCheckListen: an address off loopback needs TLS or the admin's
// knowing choice of plain HTTP; a malformed address is refused.
func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		listen  string
		anyAddr bool
		plain   bool // want ErrPlainRemote
		bad     bool // want another error
	}{
		{"127.0.0.1:0", false, false, false}, {"localhost:1", false, false, false}, {"[::1]:1", false, false, false},
		{"0.0.0.0:0", false, true, false}, {"192.0.2.1:8765", false, true, false}, {"0.0.0.0:0", true, false, false},
		{"nonsense", false, false, true},
	} {
		err := CheckListen(tc.listen, tc.anyAddr)
		if errors.Is(err, ErrPlainRemote) != tc.plain || (err != nil && !errors.Is(err, ErrPlainRemote)) != tc.bad {
			t.Errorf("CheckListen(%q, %v) = %v", tc.listen, tc.anyAddr, err)
		}
	}
}
