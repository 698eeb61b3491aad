package natstest

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// AccountsConf returns the repository's deploy/nats/accounts.conf with its
// remote agent templates (COLLAB's exports and the agent's account)
// instantiated for each of agents and every password variable replaced by
// "pw-" and the user's name: "pw-collab", "pw-bridge", "pw-remote-AGENT".
// Parse it with server.ProcessConfigFile after writing it to a file.
func AccountsConf(t testing.TB, agents ...string) string {
	t.Helper()
	conf := shipped(t)
	for _, part := range []string{"exports", "account"} {
		block, end := template(t, conf, part)
		var out strings.Builder
		for _, a := range agents {
			b := strings.ReplaceAll(block, "$COLLAB_REMOTE_AGENT_PASSWORD", "@PASSWORD@")
			b = strings.ReplaceAll(b, "AGENT", a)
			out.WriteString(strings.ReplaceAll(b, "@PASSWORD@", `"pw-remote-`+a+`"`))
		}
		conf = conf[:end] + out.String() + conf[end:]
	}
	conf = strings.ReplaceAll(conf, "$COLLAB_NATS_PASSWORD", `"pw-collab"`)
	return strings.ReplaceAll(conf, "$COLLAB_BRIDGE_PASSWORD", `"pw-bridge"`)
}

// RemoteMaxConnections is the connection cap of a remote agent's account
// in accounts.conf's template (its limits { max_connections: N }).
func RemoteMaxConnections(t testing.TB) int {
	t.Helper()
	block, _ := template(t, shipped(t), "account")
	m := regexp.MustCompile(`max_connections: *([0-9]+)`).FindStringSubmatch(block)
	if m == nil {
		t.Fatal("accounts.conf: no max_connections in the remote agent account")
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func shipped(t testing.TB) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("natstest: no caller")
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "..", "deploy", "nats", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// template returns the lines between "# BEGIN remote agent PART" and
// "# END remote agent PART" without their "# " (as add-remote-agent.sh
// prints them), and the offset of the END line's "#", where copies go.
func template(t testing.TB, conf, part string) (block string, end int) {
	t.Helper()
	begin, stop := "# BEGIN remote agent "+part+"\n", "# END remote agent "+part+"\n"
	i, j := strings.Index(conf, begin), strings.Index(conf, stop)
	if i < 0 || j < i {
		t.Fatalf("accounts.conf: no remote agent %s template", part)
	}
	var b strings.Builder
	for _, l := range strings.Split(conf[i+len(begin):j], "\n") {
		l = strings.TrimLeft(l, " ")
		if l == "" {
			continue
		}
		rest, ok := strings.CutPrefix(l, "# ")
		if !ok && l != "#" {
			t.Fatalf("accounts.conf: remote agent %s template line %q is not a comment", part, l)
		}
		b.WriteString(rest + "\n")
	}
	return b.String(), j
}
