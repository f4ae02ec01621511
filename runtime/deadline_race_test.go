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
