package natstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// TestAddRemoteAgent: deploy/nats/add-remote-agent.sh prints the same
// two parts AccountsConf puts in (with the connection cap it is given),
// a server configuration with them pasted in loads, and bad names and
// caps are refused.
func TestAddRemoteAgent(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(self), "..", "..", "..", "deploy", "nats", "add-remote-agent.sh")
	run := func(args ...string) (string, error) {
		out, err := exec.Command("sh", append([]string{script}, args...)...).Output()
		return string(out), err
	}
	for _, tc := range []struct{ agent, max, want string }{
		{"r2-d2", "", "max_connections: 16"},
		{"agent_7", "9", "max_connections: 9"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			args := []string{tc.agent}
			if tc.max != "" {
				args = append(args, tc.max)
			}
			out, err := run(args...)
			if err != nil {
				t.Fatal(err)
			}
			exports, account, ok := strings.Cut(out, "# In accounts { ... }, next to COLLAB:\n")
			exports, ok2 := strings.CutPrefix(exports, "# In COLLAB's exports: [ ... ]:\n")
			if !ok || !ok2 || !strings.Contains(account, tc.want) {
				t.Fatalf("output:\n%s", out)
			}
			variable := "$COLLAB_REMOTE_" + strings.ToUpper(strings.ReplaceAll(tc.agent, "-", "_")) + "_PASSWORD"
			if !strings.Contains(account, variable) {
				t.Fatalf("no %s in:\n%s", variable, account)
			}
			account = strings.ReplaceAll(account, variable, `"pw-remote-`+tc.agent+`"`)
			conf := AccountsConf(t, tc.agent)
			if !strings.Contains(conf, exports) || !strings.Contains(conf, strings.Replace(account, tc.want, "max_connections: 16", 1)) {
				t.Fatalf("the script's parts are not AccountsConf's:\n%s", out)
			}
			// Pasted in by hand: after the markers' lines.
			pasted := AccountsConf(t)
			for _, p := range []struct{ marker, text string }{
				{"# END remote agent exports\n", exports},
				{"# END remote agent account\n", account},
			} {
				at := strings.Index(pasted, p.marker) + len(p.marker)
				pasted = pasted[:at] + p.text + pasted[at:]
			}
			path := filepath.Join(t.TempDir(), "nats.conf")
			if err := os.WriteFile(path, []byte(pasted), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := server.ProcessConfigFile(path); err != nil {
				t.Fatalf("pasted:\n%s\n%v", pasted, err)
			}
		})
	}
	for _, args := range [][]string{{}, {"-x"}, {"a b"}, {"a;b"}, {"a", "0"}, {"a", "x"}, {"a", "12345"}, {"a", "4", "5"}} {
		if out, err := run(args...); err == nil {
			t.Errorf("%q accepted: %s", args, out)
		}
	}
}
