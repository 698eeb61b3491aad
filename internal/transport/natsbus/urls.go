package natsbus

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/collabdev/collab/internal/errkind"
)

// ErrBadURL is wrapped by the error of [ParseURLs] (and so of [Connect])
// when the server URL list is not one collab accepts.
var ErrBadURL = errors.New("natsbus: bad NATS server URL")

// DefaultPort is the port of a server URL that names none (as nats.go).
const DefaultPort = "4222"

// MaxURLs is the most servers a URL list may name.
const MaxURLs = 16

// ParseURLs checks a comma-separated list of NATS server URLs, the form of
// --nats and NATS_URL, and returns its URLs with the spaces around them
// removed. Each is nats://HOST:PORT or tls://HOST:PORT (PORT defaults to
// DefaultPort, as in nats.go), with an optional
// user and password or token before the host (nats://user:pass@host:4222),
// and no path, query or fragment; an IPv6 host is in brackets. The list is
// not empty, names at most MaxURLs servers and none twice. The error wraps
// ErrBadURL, is of kind Invalid (errkind), and names the bad URL, its
// credentials hidden.
//
// Every NATS client of collab connects through [Connect], which calls it:
// one list, one parser. A client connects to one of the servers (picked at
// random) and, when it loses that one, reconnects to another of the list or
// of those the cluster told it about.
func ParseURLs(list string) ([]string, error) {
	urls, err := parseURLs(list)
	if err != nil {
		return nil, errkind.Wrap(errkind.Invalid, err)
	}
	return urls, nil
}

func parseURLs(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("%w: no server URL", ErrBadURL)
	}
	parts := strings.Split(list, ",")
	if len(parts) > MaxURLs {
		return nil, fmt.Errorf("%w: %d servers, at most %d", ErrBadURL, len(parts), MaxURLs)
	}
	seen := make(map[string]bool, len(parts))
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("%w: URL %d of the list is empty", ErrBadURL, i+1)
		}
		hostPort, err := checkURL(p)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %s", ErrBadURL, redact(p), err)
		}
		if seen[hostPort] {
			return nil, fmt.Errorf("%w %q: %s is listed twice", ErrBadURL, redact(p), hostPort)
		}
		seen[hostPort] = true
		out = append(out, p)
	}
	return out, nil
}

// checkURL checks one URL and returns its host:port.
func checkURL(s string) (string, error) {
	for _, c := range s {
		if c <= ' ' || c == 0x7f {
			return "", errors.New("contains a space or control character")
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", errors.New("not a URL (want nats://HOST:PORT or tls://HOST:PORT)")
	}
	if u.Scheme != "nats" && u.Scheme != "tls" {
		return "", errors.New("the scheme must be nats:// or tls://")
	}
	if u.Opaque != "" || u.Host == "" {
		return "", errors.New("no host (want nats://HOST:PORT or tls://HOST:PORT)")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", errors.New("a server URL has no path, query or fragment")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil && u.Port() == "" && !strings.HasSuffix(u.Host, ":") {
		host, port, err = u.Hostname(), DefaultPort, nil
	}
	if err != nil {
		return "", errors.New("want HOST:PORT after the scheme (the client port is usually 4222)")
	}
	if host == "" {
		return "", errors.New("no host before the port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
		return "", fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return net.JoinHostPort(strings.ToLower(host), port), nil
}
