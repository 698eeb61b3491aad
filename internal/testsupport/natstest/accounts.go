package natstest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// AccountsConf returns the repository's deploy/nats/accounts.conf with its
// remote agent template instantiated for each of agents and every password
// variable replaced by "pw-" and the user's name: "pw-collab", "pw-bridge",
// "pw-remote-AGENT". Parse it with server.ProcessConfigFile after writing it
// to a file.
func AccountsConf(t testing.TB, agents ...string) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("natstest: no caller")
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "..", "deploy", "nats", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(data)
	const begin, end = "# BEGIN remote agent template", "# END remote agent template"
	i, j := strings.Index(conf, begin), strings.Index(conf, end)
	if i < 0 || j < i {
		t.Fatal("accounts.conf: no remote agent template")
	}
	var block []string
	for _, l := range strings.Split(conf[i:j], "\n")[1:] {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "# "); ok && (len(block) > 0 || strings.HasPrefix(strings.TrimSpace(rest), "{")) {
			block = append(block, rest)
		}
	}
	user := strings.Join(block, "\n")
	var users strings.Builder
	for _, a := range agents {
		users.WriteString(strings.ReplaceAll(strings.ReplaceAll(user, "$COLLAB_REMOTE_AGENT_PASSWORD", `"pw-remote-`+a+`"`), "AGENT", a))
		users.WriteString("\n")
	}
	conf = conf[:j] + users.String() + conf[j:]
	conf = strings.ReplaceAll(conf, "$COLLAB_NATS_PASSWORD", `"pw-collab"`)
	return strings.ReplaceAll(conf, "$COLLAB_BRIDGE_PASSWORD", `"pw-bridge"`)
}
