package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/testsupport/fusecount"
)

func TestFitLine(t *testing.T) {
	a, b := fitLine([]float64{1, 2, 5, 10}, []float64{3.5, 5, 9.5, 17})
	if math.Abs(a-2) > 1e-9 || math.Abs(b-1.5) > 1e-9 {
		t.Errorf("fitLine = %v, %v; want 2, 1.5", a, b)
	}
	if a, b := fitLine([]float64{1}, []float64{4}); a != 4 || b != 0 {
		t.Errorf("fitLine of one point = %v, %v; want 4, 0", a, b)
	}
}

// needFUSE skips a test without FUSE, unless COLLAB_TEST_REQUIRE_FUSE is 1.
func needFUSE(t *testing.T) {
	t.Helper()
	if err := fusecount.Available(); err != nil {
		if os.Getenv("COLLAB_TEST_REQUIRE_FUSE") == "1" {
			t.Fatalf("FUSE required (COLLAB_TEST_REQUIRE_FUSE=1): %v", err)
		}
		t.Skipf("FUSE unavailable: %v", err)
	}
}

// TestNFSOpsSmall measures two kinds of watcher over 1–2 channels and
// watchers with a 1 s window: every figure measured, every watcher making
// some requests (its polls' getattr at least).
func TestNFSOpsSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs watchers for seconds")
	}
	needFUSE(t)
	b := &bench{dir: t.TempDir(), runs: 1, size: sizes{nfsWindow: time.Second, nfsMax: 2}, progress: io.Discard, nfsServerOps: defaultNFSOps}
	for _, m := range nfsModes() {
		if m.key != "poll-1s" && m.key != "nats-1s" {
			continue
		}
		figs, one := b.nfsMode(context.Background(), m)
		if len(figs) != 3 {
			t.Fatalf("%s: %d figures, want 3", m.key, len(figs))
		}
		var buf bytes.Buffer
		writeTable(&buf, figs)
		checkFigures(t, figs, buf.String())
		if one <= 0 || *figs[2].Value <= 0 {
			t.Errorf("%s: one watcher %v ops/s, two %v; want requests counted", m.key, one, *figs[2].Value)
		}
	}
}

// TestScaleSmall runs the scale part with 8 watcher processes.
func TestScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab and runs watcher processes")
	}
	needFUSE(t)
	b := &bench{dir: t.TempDir(), runs: 1, progress: io.Discard,
		size: sizes{scale: scaleSize{watchers: 8, channels: 4, hosts: 2, messages: 5, window: time.Second}}}
	figs := b.scale(context.Background())
	if len(figs) != 2*scN {
		t.Fatalf("%d figures, want %d", len(figs), 2*scN)
	}
	var buf bytes.Buffer
	writeTable(&buf, figs)
	checkFigures(t, figs, buf.String())
}
