package web

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// checkHost refuses, 421, a request whose Host is not this server: a page
// of another name that a DNS rebinding pointed here, or a request meant
// for another server. See hostAllowed.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if err := hostAllowed(r.Host, local, r.TLS != nil || s.cfg.TLS, s.cfg.Hosts); err != nil {
			refuse(w, r, http.StatusMisdirectedRequest, err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed checks a request's Host against the address local it came
// in on. The Host's port (the scheme's default when it names none) must
// be local's, and its name local's IP, localhost or a loopback IP when
// local is loopback, or one of names; an entry of names with a port
// ("NAME:PORT", for a proxy or a tunnel) matches that name and port
// instead.
func hostAllowed(hostHeader string, local net.Addr, tls bool, names []string) error {
	host, port, err := splitHost(hostHeader, tls)
	if err != nil {
		return err
	}
	for _, n := range names {
		nh, np, err := net.SplitHostPort(n)
		if err == nil && normHost(nh) == host && np == port {
			return nil
		}
	}
	lip, lport, err := localAddr(local)
	if err != nil {
		return err
	}
	wrong := fmt.Errorf("web: this server does not answer to %q: use its address with port %s, or start it with --host NAME", hostHeader, lport)
	if port != lport {
		return wrong
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.Equal(lip) || (lip.IsLoopback() && ip.IsLoopback()) {
			return nil
		}
		return wrong
	}
	if host == "localhost" && lip.IsLoopback() {
		return nil
	}
	for _, n := range names {
		if _, _, err := net.SplitHostPort(n); err != nil && normHost(n) == host {
			return nil
		}
	}
	return wrong
}

// splitHost returns a Host header's name (lower case, no brackets, no
// final dot) and port, the scheme's default when it has none.
func splitHost(h string, tls bool) (host, port string, err error) {
	if h == "" {
		return "", "", errors.New("web: the request names no Host")
	}
	host, port, err = net.SplitHostPort(h)
	if err != nil {
		// No port: the whole is the name.
		host, port = h, "80"
		if tls {
			port = "443"
		}
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", "", fmt.Errorf("web: bad Host %q", h)
	}
	return normHost(host), port, nil
}

func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")), ".")
}

// localAddr is the IP and port the request came in on (http.Server puts
// it in the request's context).
func localAddr(a net.Addr) (net.IP, string, error) {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP, strconv.Itoa(t.Port), nil
	}
	if a != nil {
		if h, p, err := net.SplitHostPort(a.String()); err == nil {
			if ip := net.ParseIP(h); ip != nil {
				return ip, p, nil
			}
		}
	}
	return nil, "", errors.New("web: the request's local address is unknown")
}
