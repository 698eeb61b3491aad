package natstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/collabdev/collab/internal/transport/natsbus"
)

// deployDir is the repository's deploy/.
func deployDir(t *testing.T) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(self), "..", "..", "..", "deploy")
}

// testPKI writes a CA and, signed by it, a certificate for 127.0.0.1 with
// server and client use (for the client port and the routes) under the
// names deploy/nats/cluster/cluster.conf gives them, in dir.
func testPKI(t *testing.T, dir string) {
	t.Helper()
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	write("ca.pem", "CERTIFICATE", caDER)
	for i, name := range []string{"server", "route"} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		write(name+".pem", "CERTIFICATE", der)
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
}

// TestClusterConfig: each node's file of deploy/nats/cluster loads with
// nats-server's own parser (certificates of a test CA at the paths it
// names, the accounts of deploy/nats/accounts.conf with a remote agent),
// with the node's name, the cluster's three routes over TLS, client TLS,
// JetStream and the accounts; then the three, moved to loopback ports,
// form one cluster, and collab nats init's InitStream makes an R3 stream
// through it as the team's user.
func TestClusterConfig(t *testing.T) {
	src := filepath.Join(deployDir(t), "nats", "cluster")
	pki := t.TempDir()
	testPKI(t, pki)
	shared, err := os.ReadFile(filepath.Join(src, "cluster.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "nats")
	if err := os.MkdirAll(filepath.Join(conf, "cluster"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "accounts.conf"), []byte(AccountsConf(t, "laptop")), 0o644); err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(shared), "/etc/collab/nats/", pki+"/")
	if err := os.WriteFile(filepath.Join(conf, "cluster", "cluster.conf"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, ClusterSize)
	c := &Cluster{t: t}
	for i := range ClusterSize {
		name := nodeName(i)
		data, err := os.ReadFile(filepath.Join(src, name+".conf"))
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(conf, "cluster", name+".conf")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := server.ProcessConfigFile(file)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkNodeOptions(t, name, o)
		// On loopback: the ports, routes and store are the test's.
		o.Host, o.Port, o.HTTPPort = "127.0.0.1", -1, 0
		o.Cluster.Host, o.Cluster.Port = "127.0.0.1", ports[i]
		o.Routes = nil
		for _, p := range ports {
			o.Routes = append(o.Routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
		}
		o.StoreDir, o.NoLog, o.NoSigs = t.TempDir(), true, true
		c.nodes = append(c.nodes, startServer(t, *o))
	}
	c.WaitReady()

	urls := strings.ReplaceAll(c.URLs(), "nats://", "tls://")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := natsbus.Connect(ctx, natsbus.Options{URL: urls, User: "collab", Password: "pw-collab", TLSCA: filepath.Join(pki, "ca.pem"),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("an R3 stream with its followers current", func() bool {
		st, err := b.StreamStatus(ctx)
		return err == nil && st.Replicas == 3 && st.Cluster == "collab" && st.Leader != "" && len(st.Current) == 2
	})
}

// checkNodeOptions checks what a node's parsed configuration says.
func checkNodeOptions(t *testing.T, name string, o *server.Options) {
	t.Helper()
	switch {
	case o.ServerName != name:
		t.Errorf("%s: server_name %q", name, o.ServerName)
	case o.Cluster.Name != "collab" || o.Cluster.Port != 6222 || len(o.Routes) != ClusterSize:
		t.Errorf("%s: cluster %q on port %d with %d routes, want collab on 6222 with 3", name, o.Cluster.Name, o.Cluster.Port, len(o.Routes))
	case !o.Cluster.NoAdvertise:
		t.Errorf("%s: the cluster advertises its nodes' addresses to clients", name)
	case o.Cluster.TLSConfig == nil || o.Cluster.TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert:
		t.Errorf("%s: routes without mutual TLS", name)
	case o.TLSConfig == nil || o.Port != 4222:
		t.Errorf("%s: clients on port %d, TLS %v; want 4222 with TLS", name, o.Port, o.TLSConfig != nil)
	case !o.JetStream || o.StoreDir != "/var/lib/nats" || o.JetStreamMaxStore <= 0:
		t.Errorf("%s: JetStream %v in %q, max store %d", name, o.JetStream, o.StoreDir, o.JetStreamMaxStore)
	case o.MaxPayload < 1<<21:
		t.Errorf("%s: max_payload %d, want 2 MB", name, o.MaxPayload)
	}
	accounts := map[string]bool{}
	for _, a := range o.Accounts {
		accounts[a.Name] = true
	}
	if !accounts["COLLAB"] || !accounts["REMOTE-laptop"] {
		t.Errorf("%s: accounts %v, want COLLAB and REMOTE-laptop", name, accounts)
	}
}

// TestSystemdUnits: the units pass systemd-analyze verify (when it is
// here), with the collab binary's path pointed at one that exists.
func TestSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("no systemd-analyze")
	}
	dir := t.TempDir()
	for _, u := range []string{"collab-serve.service", "collab-bridge.service", "collab-watcher@.service"} {
		data, err := os.ReadFile(filepath.Join(deployDir(t), u))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(data), "/usr/local/bin/collab", "/bin/true")
		for _, want := range []string{"Restart=on-failure", "EnvironmentFile=", "NoNewPrivileges=yes", "ProtectSystem=full"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: no %s", u, want)
			}
		}
		path := filepath.Join(dir, strings.Replace(u, "@", "@test", 1))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(analyze, "verify", path).CombinedOutput()
		if err != nil {
			if strings.Contains(string(out), "System has not been booted with systemd") || strings.Contains(string(out), "Failed to initialize manager") {
				t.Skipf("systemd-analyze cannot run here: %s", out)
			}
			t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
		}
	}
}

// TestInstallScript: deploy/install.sh (under DESTDIR) installs a cluster
// node's configuration and the units, says "unchanged" the second time,
// keeps a file an administrator changed unless --force (then keeps it as
// .orig), and refuses a node number out of range.
func TestInstallScript(t *testing.T) {
	dest, tmp := t.TempDir(), t.TempDir()
	script := filepath.Join(deployDir(t), "install.sh")
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command("sh", append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "DESTDIR="+dest)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	node := filepath.Join(dest, "etc", "collab", "nats", "cluster", "nats-2.conf")
	if _, _, err := run("--nats-cluster", "2"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{node, filepath.Join(dest, "etc", "collab", "nats", "cluster", "cluster.conf"), filepath.Join(dest, "etc", "collab", "nats", "accounts.conf")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	if out, _, err := run("--nats-cluster", "2"); err != nil || !strings.Contains(out, "unchanged "+node) {
		t.Errorf("second run: %v %q", err, out)
	}
	if err := os.WriteFile(node, []byte("# changed here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run("--nats-cluster", "2"); err != nil || !strings.Contains(stderr, node+" differs") {
		t.Errorf("run over a changed file: %v %q", err, stderr)
	}
	if data, _ := os.ReadFile(node); string(data) != "# changed here\n" {
		t.Errorf("the changed file was replaced without --force: %q", data)
	}
	if out, _, err := run("--nats-cluster", "2", "--force"); err != nil || !strings.Contains(out, "replaced "+node) {
		t.Errorf("--force: %v %q", err, out)
	}
	if data, _ := os.ReadFile(node + ".orig"); string(data) != "# changed here\n" {
		t.Errorf("--force kept %q as .orig", data)
	}
	if _, stderr, err := run("--nats-cluster", "4"); err == nil || !strings.Contains(stderr, "from 1 to 3") {
		t.Errorf("--nats-cluster 4: %v %q", err, stderr)
	}
	if _, stderr, err := run("--systemd", "--bin", "/bin/true", "--prefix", tmp, "--root", filepath.Join(tmp, "tree"), "--no-shared-bin"); err != nil {
		t.Fatalf("--systemd: %v %s", err, stderr)
	}
	for _, u := range []string{"collab-watcher@.service", "collab-resume.service", "collab-bridge.service", "collab-serve.service"} {
		if _, err := os.Stat(filepath.Join(dest, "etc", "systemd", "system", u)); err != nil {
			t.Errorf("unit not installed: %v", err)
		}
	}
}
