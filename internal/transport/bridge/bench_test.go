package bridge

import (
	"testing"
	"time"

	"github.com/collabdev/collab/internal/testsupport/natstest"
)

// BenchmarkPost: signed posts as NATS requests through one or two bridges
// (loopback), from 8 concurrent clients; each post is verified and
// published as its file.
func BenchmarkPost(b *testing.B) {
	for _, bridges := range []int{1, 2} {
		b.Run(map[int]string{1: "one-bridge", 2: "two-bridges"}[bridges], func(b *testing.B) {
			e := newEnv(b)
			srv := natstest.Start(b, true, nil)
			for range bridges {
				serve(b, e.server(Config{}), srv.URL())
			}
			nc := connect(b, srv.URL())
			key := e.keys["alice"]
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m := msg("alice", "dev", "bench", key)
					reply, err := nc.Request(RequestSubject(OpPost, "alice"), postBody(b, m), 10*time.Second)
					if err != nil {
						b.Error(err)
						return
					}
					if len(reply.Data) < 11 || string(reply.Data[:10]) != `{"ok":true` {
						b.Errorf("reply %s", reply.Data)
						return
					}
				}
			})
		})
	}
}
