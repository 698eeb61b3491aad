package channel_test
import ("testing";"time";"sync";"collab/channel")
func TestProbeSpeed2(t *testing.T){
 for _, pause := range []time.Duration{time.Millisecond, 5*time.Millisecond, 20*time.Millisecond} {
 root := newRoot(t, "load")
 r, _ := channel.NewReader(root, "load", channel.Cursor{}, channel.ReaderOptions{})
 stop := make(chan struct{}); var rw sync.WaitGroup; n := 0; scans := 0
 rw.Go(func(){ for { select { case <-stop: return; case <-time.After(pause): }; m, _, _ := r.Scan(); n += len(m); scans++ } })
 start := time.Now()
 var wg sync.WaitGroup
 for range 8 { wg.Go(func(){ cw := &channel.Writer{Root: root, Now: fixed(t0)}; for range 1000 { post(t, cw, "load", "bot", "x") } }) }
 wg.Wait()
 t.Log(pause, "posts", time.Since(start), n, scans)
 close(stop); rw.Wait()
 }
}
