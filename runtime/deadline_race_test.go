package uringrt

import (
	"testing"
	"time"
)

// TestDeadlineClearedAsTimerFires clears a deadline (set to zero) while
// its timer's callback runs, between the callback's check that the
// deadline passed and its marking it expired: once set has returned, the
// cleared deadline must not be reported expired. Before, the callback
// marked it expired after set had cleared it, so a Read with no deadline
// failed with a timeout.
func TestDeadlineClearedAsTimerFires(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	deadlineFireHook = func() {
		entered <- struct{}{}
		<-release
	}
	defer func() { deadlineFireHook = nil }()
	var d deadline
	defer d.stop()
	fired := make(chan struct{})
	d.set(time.Now().Add(time.Millisecond), func() { close(fired) })
	<-entered
	cleared := make(chan struct{})
	go func() {
		d.set(time.Time{}, func() {})
		close(cleared)
	}()
	time.Sleep(20 * time.Millisecond) // set(zero) runs now, or waits for the callback
	close(release)
	<-fired
	<-cleared
	if d.expired.Load() {
		t.Fatal("a deadline cleared by set(zero) was reported expired")
	}
}

// TestDeadlineMovedLazily moves a deadline later, then earlier, then
// clears it, without the timer being moved each time (deadline.go): the
// timer armed for the first time fires, finds the deadline not yet passed
// and re-arms for what is left, so the deadline passes at its last time
// only, once, and a cleared one never.
func TestDeadlineMovedLazily(t *testing.T) {
	var d deadline
	defer d.stop()
	fired := make(chan struct{}, 4)
	fire := func() { fired <- struct{}{} }
	d.set(time.Now().Add(10*time.Millisecond), fire)
	if !d.setFast(time.Now().Add(time.Hour)) {
		t.Fatal("setFast after set did nothing")
	}
	time.Sleep(100 * time.Millisecond) // the first timer fired and re-armed
	if d.expired.Load() || len(fired) != 0 {
		t.Fatal("a deadline moved an hour later passed at its old time")
	}
	d.setFast(time.Now().Add(20 * time.Millisecond)) // earlier: the timer moves
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("a deadline moved earlier never passed")
	}
	if !d.expired.Load() {
		t.Fatal("fired without marking the deadline expired")
	}
	d.setFast(time.Now().Add(10 * time.Millisecond))
	d.setFast(time.Time{}) // cleared before its timer fires
	time.Sleep(100 * time.Millisecond)
	if d.expired.Load() || len(fired) != 0 {
		t.Fatal("a cleared deadline passed")
	}
	d.setFast(time.Unix(1, 0)) // in the past: fires at once, as net/http's abort of its background read does
	if !d.expired.Load() || len(fired) != 1 {
		t.Fatal("a deadline in the past did not fire at once")
	}
	var fresh deadline
	if fresh.setFast(time.Now()) {
		t.Fatal("setFast with no fire kept did something")
	}
}

// TestDeadlineStoppedWhileTimerFires: a connection's Close stops its
// deadlines while a timer's callback waits for the deadline's lock, the
// deadline having moved later since the timer was set. Once stop has
// returned, the callback must not re-arm the timer: it would fire after
// Close, holding the connection until then. Before, it re-armed whenever
// stop took the lock first (about half the time).
func TestDeadlineStoppedWhileTimerFires(t *testing.T) {
	const n = 8
	ds := make([]deadline, n)
	fired := make(chan int, n)
	stopped := make(chan struct{}, n)
	for i := range ds {
		ds[i].set(time.Now().Add(20*time.Millisecond), func() { fired <- i })
		ds[i].setFast(time.Now().Add(200 * time.Millisecond))
		ds[i].mu.Lock()
		go func() {
			ds[i].stop() // waits for mu, before the timer's callback does
			stopped <- struct{}{}
		}()
	}
	time.Sleep(60 * time.Millisecond) // every first timer fired; its callback waits for mu
	for i := range ds {
		ds[i].mu.Unlock()
	}
	for range n {
		<-stopped
	}
	time.Sleep(400 * time.Millisecond) // past the moved deadline
	if len(fired) != 0 {
		t.Fatalf("%d of %d deadlines fired after stop", len(fired), n)
	}
}
