package web

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Failed token sign-ins (the sign-in page's form) are limited per client
// address: a bucket of signInBurst tries that refills one every
// signInRefill. A try is taken before the token is looked at and given
// back when it signs in, so concurrent guesses cannot outrun the bucket.
const (
	signInBurst  = 5
	signInRefill = 12 * time.Second
	// maxBuckets bounds the addresses remembered; past it, the addresses
	// not yet remembered share one more bucket.
	maxBuckets = 4096
)

// limiter is a token bucket per key.
type limiter struct {
	burst int
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

// bucket holds tries tries as of at.
type bucket struct {
	tries float64
	at    time.Time
}

func newLimiter(burst int, every time.Duration, now func() time.Time) *limiter {
	return &limiter{burst: burst, every: every, now: now, buckets: map[string]*bucket{}}
}

// take takes a try from key's bucket. Without one it returns false and
// how long until the next.
func (l *limiter) take(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(key, l.now())
	if b.tries < 1 {
		return false, time.Duration((1 - b.tries) * float64(l.every))
	}
	b.tries--
	return true, 0
}

// refund gives key's bucket back the try a successful sign-in took.
func (l *limiter) refund(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(key, l.now())
	b.tries = min(b.tries+1, float64(l.burst))
}

// bucket returns key's bucket refilled to now; l.mu is held. A full map
// first forgets the buckets that are full again (as good as new).
func (l *limiter) bucket(key string, now time.Time) *bucket {
	b, ok := l.buckets[key]
	if !ok && len(l.buckets) >= maxBuckets {
		for k, o := range l.buckets {
			if l.refill(o, now); o.tries >= float64(l.burst) {
				delete(l.buckets, k)
			}
		}
		if len(l.buckets) >= maxBuckets {
			key = "" // the shared bucket of the overflow
			b, ok = l.buckets[key]
		}
	}
	if !ok {
		b = &bucket{tries: float64(l.burst), at: now}
		l.buckets[key] = b
	}
	l.refill(b, now)
	return b
}

func (l *limiter) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tries = min(b.tries+float64(d)/float64(l.every), float64(l.burst))
		b.at = now
	}
}

// clientKey is the address a request's failed sign-ins count against:
// its IP, an IPv6 one by its /64 (a host often holds a whole /64).
// Behind a proxy every client is the proxy's: forwarded headers are not
// believed, since any client can write them.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
