package fakemodel_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// TestOnlyLoopback runs each CLI through a tool-call round under strace
// and fails on any connection (or datagram, such as a DNS query) to an
// address other than loopback: the settings of [fakemodel.Server.CLI]
// must stop every update check, telemetry and feature-flag call. Skipped
// without a working strace, unless the real CLIs are required (CI, which
// installs strace).
func TestOnlyLoopback(t *testing.T) {
	skip := t.Skipf
	if os.Getenv("COLLAB_TEST_REQUIRE_CLIS") != "" {
		skip = t.Fatalf
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		skip("no strace")
	}
	if out, err := exec.Command(strace, "-f", "-o", os.DevNull, "true").CombinedOutput(); err != nil {
		skip("strace does not work here: %v: %s", err, out)
	}
	cases := []struct {
		cli  string
		args []string
	}{
		{fakemodel.ClaudeCode, []string{"-p", "--output-format", "stream-json", "--verbose", "Run the tool."}},
		{fakemodel.CodexCLI, []string{"exec", "--json", "--skip-git-repo-check", "Run the tool."}},
		{fakemodel.GeminiCLI, []string{"-p", "Run the tool.", "-o", "stream-json", "--approval-mode", "yolo"}},
	}
	for _, tc := range cases {
		t.Run(tc.cli, func(t *testing.T) {
			t.Parallel()
			s := fakemodel.Start(t)
			c := s.CLI(t, tc.cli)
			s.Next(fakemodel.Shell("echo " + toolOutput))
			trace := filepath.Join(t.TempDir(), "trace")
			c.Argv = append([]string{strace, "-f", "-qq", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", trace}, c.Argv...)
			res, err := c.Run(context.Background(), runTimeout, tc.args...)
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, res.Stdout, res.StderrTail)
			}
			if n := len(s.Requests()); n != 2 {
				t.Errorf("%d model calls, want 2", n)
			}
			b, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range foreignAddrs(string(b)) {
				t.Errorf("reached %s", bad)
			}
		})
	}
}

var (
	inet4 = regexp.MustCompile(`sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)`)
	inet6 = regexp.MustCompile(`sin6_port=htons\((\d+)\).*?inet_pton\(AF_INET6, "([^"]+)"`)
)

// foreignAddrs returns the non-loopback addresses ("host:port") in the
// socket calls of an strace log.
func foreignAddrs(trace string) []string {
	var bad []string
	for _, line := range strings.Split(trace, "\n") {
		if !strings.Contains(line, "AF_INET") {
			continue
		}
		for _, re := range []*regexp.Regexp{inet4, inet6} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				switch m[2] {
				case "127.0.0.1", "::1", "::ffff:127.0.0.1":
				default:
					bad = append(bad, m[2]+":"+m[1])
				}
			}
		}
	}
	return bad
}

func TestForeignAddrs(t *testing.T) {
	trace := `12 connect(17, {sa_family=AF_INET, sin_port=htons(40011), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS
12 connect(18, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0
13 sendto(19, "x", 1, 0, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28) = 1
13 connect(20, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0
14 connect(21, {sa_family=AF_UNIX, sun_path="/run/x"}, 110) = 0`
	got := strings.Join(foreignAddrs(trace), " ")
	if want := "10.255.255.53:53 2001:db8::1:443"; got != want {
		t.Errorf("foreignAddrs = %q, want %q", got, want)
	}
}
