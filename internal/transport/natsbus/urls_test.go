package natsbus_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

func TestParseURLs(t *testing.T) {
	good := []struct{ in, want string }{
		{"nats://a:4222", "nats://a:4222"},
		{"nats://a:4222, nats://b:4222 ,tls://c.example.org:4223", "nats://a:4222,nats://b:4222,tls://c.example.org:4223"},
		{"nats://user:pw@a:4222,nats://tok@b:4222", "nats://user:pw@a:4222,nats://tok@b:4222"},
		{"nats://[::1]:4222,nats://127.0.0.1:4222", "nats://[::1]:4222,nats://127.0.0.1:4222"},
		{"nats://a", "nats://a"}, // port 4222, as nats.go
		{"nats://a:4222/", "nats://a:4222/"},
	}
	for _, c := range good {
		got, err := natsbus.ParseURLs(c.in)
		if err != nil || strings.Join(got, ",") != c.want {
			t.Errorf("ParseURLs(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, want string }{
		{"", "no server URL"},
		{" , ", "URL 1 of the list is empty"},
		{"nats://a:4222,", "URL 2 of the list is empty"},
		{"nats://a:4222,,nats://b:4222", "URL 2 of the list is empty"},
		{"http://a:4222", `"http://a:4222": the scheme must be nats:// or tls://`},
		{"a:4222", `"a:4222": the scheme must be nats:// or tls://`},
		{"nats://a:4222,b:4222", `"b:4222"`},
		{"nats://:4222", "no host before the port"},
		{"nats://a:0", `port "0"`},
		{"nats://a:65536", `port "65536"`},
		{"nats://a:42x", "nats://a:42x"},
		{"nats://a:4222/x", "no path, query or fragment"},
		{"nats://a:4222?x=1", "no path, query or fragment"},
		{"nats://a:4222,nats://A:4222", "a:4222 is listed twice"},
		{"nats://a:4222,nats://a", "a:4222 is listed twice"},
		{"nats://a b:4222", "space"},
		{"nats:a:4222", "no host"},
		{"nats://user:secret@a:99999", `"nats://redacted@a:99999"`},
		{strings.TrimSuffix(strings.Repeat("nats://a:4222,", 17), ","), "17 servers, at most 16"},
	}
	for _, c := range bad {
		_, err := natsbus.ParseURLs(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseURLs(%q) = %v; want an error with %q", c.in, err, c.want)
			continue
		}
		if !errors.Is(err, natsbus.ErrBadURL) || errkind.Of(err) != errkind.Invalid {
			t.Errorf("ParseURLs(%q): %v is not ErrBadURL of kind Invalid", c.in, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseURLs(%q): the error shows the password: %v", c.in, err)
		}
	}
}

// TestConnectRefusesBadURLs: every client connects through Connect, which
// refuses a bad list before dialing anything.
func TestConnectRefusesBadURLs(t *testing.T) {
	s := startServer(t, false, nil)
	_, err := natsbus.Connect(ctxT(t), natsbus.Options{URL: s.URL() + ",http://b:4222"})
	if !errors.Is(err, natsbus.ErrBadURL) || !strings.Contains(err.Error(), `"http://b:4222"`) {
		t.Fatalf("Connect with a bad URL in the list: %v", err)
	}
}

func FuzzParseURLs(f *testing.F) {
	for _, s := range []string{"nats://a:4222", "nats://a:4222,tls://b:1", "nats://u:p@[::1]:4222", "", ",", "nats://a:4222/x?y#z", "tls://h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		urls, err := natsbus.ParseURLs(in)
		if err != nil {
			if !errors.Is(err, natsbus.ErrBadURL) {
				t.Fatalf("ParseURLs(%q): %v does not wrap ErrBadURL", in, err)
			}
			return
		}
		if len(urls) == 0 || len(urls) > natsbus.MaxURLs {
			t.Fatalf("ParseURLs(%q) = %d URLs", in, len(urls))
		}
		for _, u := range urls {
			l := strings.ToLower(u) // url.Parse takes NATS:// as nats://, and so does nats.go
			if !strings.HasPrefix(l, "nats://") && !strings.HasPrefix(l, "tls://") || strings.Contains(u, ",") {
				t.Fatalf("ParseURLs(%q) accepted %q", in, u)
			}
		}
		again, err := natsbus.ParseURLs(strings.Join(urls, ","))
		if err != nil || strings.Join(again, ",") != strings.Join(urls, ",") {
			t.Fatalf("ParseURLs of its own output %q: %q, %v", urls, again, err)
		}
	})
}
