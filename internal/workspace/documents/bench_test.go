package documents

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/collabdev/collab/internal/testsupport/bindfstest"
)

// BenchmarkAppend measures one append of a line (lock, read, write,
// rename, unlock): alone on a local folder, and contended by parallel
// appenders spread over two bindfs mounts (two hosts).
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	b.Run("local", func(b *testing.B) {
		f := newFolder(b, b.TempDir(), Options{})
		for b.Loop() {
			if _, err := f.Append(ctx, "log.md", "a line of text\n"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("two-hosts-contended", func(b *testing.B) {
		backing := b.TempDir()
		hosts := []*Folder{
			newFolder(b, bindfstest.Mount(b, backing), Options{}),
			newFolder(b, bindfstest.Mount(b, backing), Options{}),
		}
		var n atomic.Int64
		b.SetParallelism(2)
		b.RunParallel(func(pb *testing.PB) {
			f := hosts[n.Add(1)%2]
			for pb.Next() {
				if _, err := f.Append(ctx, "log.md", "a line of text\n"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
