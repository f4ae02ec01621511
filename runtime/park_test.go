package uringrt

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestParkReasons checks park.go's wait reason against the running Go
// runtime: a goroutine parked on a pollDesc shows as "IO wait" in a
// goroutine dump, like a Go net reader.
func TestParkReasons(t *testing.T) {
	if !pdParks {
		t.Skip("this build parks on a channel (polldesc_chan.go)")
	}
	var pd pollDesc
	done := make(chan struct{})
	go func() {
		pd.wait(func() bool { return false })
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		dump := string(buf[:runtime.Stack(buf, true)])
		if strings.Contains(dump, "[IO wait]") && strings.Contains(dump, "(*pollDesc).wait") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine parked in (*pollDesc).wait with reason \"IO wait\":\n%s", dump)
		}
		time.Sleep(time.Millisecond)
	}
	if !pd.notify() {
		t.Fatal("notify did not report waking the parked goroutine")
	}
	<-done
}

// TestPollDescWakes races notify and interrupt against wait from other
// goroutines: every wait ends (none is lost), and readiness that came
// while nobody waited ends the next wait at once.
func TestPollDescWakes(t *testing.T) {
	var pd pollDesc
	pd.notify()
	pd.wait(func() bool { return false }) // readiness pending: returns
	var aborted atomic.Bool
	for i := 0; i < 20000; i++ {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%3 == 0 {
				aborted.Store(true)
				pd.interrupt()
			} else {
				pd.notify()
			}
		}()
		pd.wait(aborted.Load)
		wg.Wait()
		aborted.Store(false)
		pd.state.CompareAndSwap(pdReady, pdIdle)
		if s := pd.state.Load(); s != pdIdle {
			t.Fatalf("round %d: state %d after wait, want idle", i, s)
		}
	}
}
