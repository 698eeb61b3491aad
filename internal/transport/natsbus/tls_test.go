package natsbus_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/collabdev/collab/internal/transport/natsbus"
)

// pki writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all PEM, and returns their files by name.
func pki(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	write := func(name, typ string, der []byte) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = path
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := newKey()
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
	issue := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) {
		key := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
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
	issue("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	issue("client", 3, x509.ExtKeyUsageClientAuth, nil)
	return files
}

func TestConnectTLS(t *testing.T) {
	f := pki(t)
	s := startServer(t, false, func(o *server.Options) {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: f["server.pem"], KeyFile: f["server-key.pem"], CaFile: f["ca.pem"], Verify: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		o.TLSConfig, o.TLSVerify, o.TLSTimeout = tc, true, 2
	})
	url := strings.Replace(s.URL(), "nats://", "tls://", 1)

	b, _ := connect(t, natsbus.Options{URL: url, TLSCA: f["ca.pem"], TLSCert: f["client.pem"], TLSKey: f["client-key.pem"]})
	if err := b.PublishPresence(presenceOf("codex")); err != nil {
		t.Errorf("publish over TLS: %v", err)
	}

	tests := []struct {
		name string
		o    natsbus.Options
	}{
		{"no client certificate", natsbus.Options{TLSCA: f["ca.pem"]}},
		{"unknown CA", natsbus.Options{TLSCert: f["client.pem"], TLSKey: f["client-key.pem"]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.URL, o.Logger, o.ConnectTimeout = url, discard(), time.Second
			start := time.Now()
			b, err := natsbus.Connect(context.Background(), o)
			if err == nil {
				b.Close()
				t.Fatal("Connect succeeded")
			}
			t.Logf("error: %v", err)
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Connect took %v", took)
			}
			if errors.Is(err, natsbus.ErrAuth) || errors.Is(err, natsbus.ErrUnreachable) {
				t.Errorf("a TLS failure reported as an authorization failure or an unreachable server: %v", err)
			}
			if !strings.Contains(err.Error(), "tls") {
				t.Errorf("the error does not say TLS: %v", err)
			}
		})
	}
}
