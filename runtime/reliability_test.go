package uringrt

// Reliability under load, faults and bad input (issue 8): nothing lost,
// nothing leaked, no crash. Every peer is on loopback and every loop is
// bounded in count and time. See docs/RELIABILITY.md.

import (
	"fmt"
	"math/rand"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// ---- helpers ----

// relTestDeadline is when a test's own loops must give up: the earlier of
// now+d and shortly before the test binary's deadline.
func relTestDeadline(t testing.TB, d time.Duration) time.Time {
	end := time.Now().Add(d)
	if tt, ok := t.(*testing.T); ok {
		if td, ok := tt.Deadline(); ok && td.Add(-5*time.Second).Before(end) {
			end = td.Add(-5 * time.Second)
		}
	}
	return end
}

// relMetricSum sums every sample of the named metric (counter or gauge).
func relMetricSum(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var s float64
	found := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		found = true
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				s += c.GetValue()
			} else if g := m.GetGauge(); g != nil {
				s += g.GetValue()
			}
		}
	}
	if !found {
		t.Fatalf("metric %s not exported", name)
	}
	return s
}

// pattern is the byte at stream offset i: a numbered stream whose loss,
// duplication or reordering shows at the first wrong byte.
func relPattern(i int64) byte { return byte(i % 251) }

func relFillPattern(b []byte, off int64) {
	for i := range b {
		b[i] = relPattern(off + int64(i))
	}
}

// relCheckPattern returns an error at the first byte of b that is not the
// stream's byte at off+i.
func relCheckPattern(b []byte, off int64) error {
	for i := range b {
		if b[i] != relPattern(off+int64(i)) {
			return fmt.Errorf("byte %d of the stream is %d, want %d", off+int64(i), b[i], relPattern(off+int64(i)))
		}
	}
	return nil
}

// relEchoCheck sends size bytes of the numbered stream on c in random chunks
// and reads them back, verifying each byte, within d.
func relEchoCheck(c net.Conn, size int, d time.Duration, rng *rand.Rand) error {
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 8192)
		for off := 0; off < size; {
			n := 1 + rng.Intn(len(buf))
			if n > size-off {
				n = size - off
			}
			relFillPattern(buf[:n], int64(off))
			if _, err := c.Write(buf[:n]); err != nil {
				errc <- err
				return
			}
			off += n
		}
		errc <- nil
	}()
	buf := make([]byte, 8192)
	for off := 0; off < size; {
		n, err := c.Read(buf)
		if err := relCheckPattern(buf[:n], int64(off)); err != nil {
			return err
		}
		off += n
		if err != nil && off < size {
			return fmt.Errorf("after %d of %d bytes: %w", off, size, err)
		}
	}
	return <-errc
}

// relCbTiers are the callback API's feature tiers: the fast path, each
// feature turned off, a handler on the worker pool, and Go's net.
var relCbTiers = []struct {
	name     string
	cfg      Config
	blocking bool
}{
	{"bufring-multishot", Config{Loops: 2}, false},
	{"no-bundles", Config{Loops: 1, Switches: experiment.Switches{DisableRecvBundles: true}}, false},
	{"no-bufring", Config{Loops: 1, Switches: experiment.Switches{DisableBufRing: true}}, false},
	{"no-multishot", Config{Loops: 1, Switches: experiment.Switches{DisableMultishot: true}}, false},
	{"no-defer-taskrun", Config{Loops: 1, Switches: experiment.Switches{DisableDeferTaskrun: true, DisableMultishot: true, DisableBufRing: true}}, false},
	{"blocking-handler", Config{Loops: 1, Workers: 4}, true},
	{"locked-loop", Config{Loops: 1, LockedLoops: true}, false},
	{"std", Config{Backend: BackendStd}, false},
}

func relEchoHandler(blocking bool) Handler {
	return HandlerFuncs{Data: func(c *CallbackConn, d []byte) { c.Write(d) }, Blocking: blocking}
}

// ---- feature tiers ----

// TestTiersCoverFeatureSwitches checks that the net.Conn contract tests
// (tiers in conn_test.go) and the callback tests (relCbTiers) run with
// DEFER_TASKRUN, multishot and buffer rings turned off, every pollable
// policy, and Go's net.
func TestTiersCoverFeatureSwitches(t *testing.T) {
	var allOff, std bool
	pol := map[experiment.Pollable]bool{}
	for _, tr := range tiers {
		c := tr.cfg
		allOff = allOff || c.DisableDeferTaskrun && c.DisableMultishot && c.DisableBufRing
		std = std || c.Backend == BackendStd
		if c.Backend != BackendStd {
			pol[c.Pollable] = true
		}
	}
	if !allOff || !std || len(pol) != 4 {
		t.Fatalf("conn tiers miss a tier: all-features-off=%v std=%v policies=%v", allOff, std, pol)
	}
	var noBR, noMS, noDT, cbStd bool
	for _, tr := range relCbTiers {
		noBR = noBR || tr.cfg.DisableBufRing
		noMS = noMS || tr.cfg.DisableMultishot
		noDT = noDT || tr.cfg.DisableDeferTaskrun
		cbStd = cbStd || tr.cfg.Backend == BackendStd
	}
	if !noBR || !noMS || !noDT || !cbStd {
		t.Fatalf("callback tiers miss a tier: no-bufring=%v no-multishot=%v no-defer-taskrun=%v std=%v", noBR, noMS, noDT, cbStd)
	}
}

// TestCallbackEchoTiers echoes on the callback API over every tier: many
// connections, random write sizes, every byte verified.
func TestCallbackEchoTiers(t *testing.T) {
	for _, tier := range relCbTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			ln := relServeCB(t, rt, relEchoHandler(tier.blocking))
			const conns, size = 20, 64 << 10
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			for i := 0; i < conns; i++ {
				c := relDialStd(t, ln.Addr().String())
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					if err := relEchoCheck(c, size, 20*time.Second, rand.New(rand.NewSource(int64(i)))); err != nil {
						errs <- fmt.Errorf("conn %d: %w", i, err)
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
