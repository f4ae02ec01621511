package uringrt

// Reliability under load, faults and bad input (issue 8): nothing lost,
// nothing leaked, no crash. Every peer is on loopback and every loop is
// bounded in count and time. See docs/RELIABILITY.md.

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// ---- helpers ----

// pattern is the byte at stream offset i: a numbered stream whose loss,
// duplication or reordering shows at the first wrong byte.
func relPattern(i int64) byte { return byte(i % 251) }

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
