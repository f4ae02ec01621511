//go:build race && !amd64 && !arm64

package uringrt

import "sync/atomic"

// pollDesc is one direction's readiness, in the manner of Go's own
// runtime netpoll pollDesc: a goroutine that got EAGAIN parks on it, and the
// loop's completion batch (a multishot poll CQE) or a deadline or Close
// wakes it. A readiness that arrives while nobody waits is remembered, so no
// wake-up is lost between the nonblock try and the park.
//
// This version parks on a channel: -race builds on ports other than amd64
// and arm64, which lack pdCommit's assembly (polldesc.go has the gopark
// version the others use).
type pollDesc struct {
	state atomic.Uint32
	ch    chan struct{} // cap 1: one pending wake
}

const (
	pdIdle    = 0 // nobody waits, no readiness pending
	pdReady   = 1 // readiness arrived while nobody waited
	pdWaiting = 2 // a goroutine is parked on ch
)

func (pd *pollDesc) init() { pd.ch = make(chan struct{}, 1) }

// notify records readiness: it wakes the parked goroutine, if any, or
// leaves pdReady for the next wait. It reports whether it woke one.
func (pd *pollDesc) notify() bool {
	for {
		switch pd.state.Load() {
		case pdWaiting:
			if pd.state.CompareAndSwap(pdWaiting, pdIdle) {
				pd.ch <- struct{}{}
				return true
			}
		case pdIdle:
			if pd.state.CompareAndSwap(pdIdle, pdReady) {
				return false
			}
		default:
			return false
		}
	}
}

// interrupt wakes the parked goroutine, if any, without recording readiness
// (deadline or Close: the woken goroutine re-checks why).
func (pd *pollDesc) interrupt() {
	if pd.state.CompareAndSwap(pdWaiting, pdIdle) {
		pd.ch <- struct{}{}
	}
}

// wait parks until readiness, returning at once if readiness is pending.
// abort is checked after the goroutine is published as waiting, so a
// deadline or Close that raced with the park is never missed; wait then
// returns without parking (the caller re-checks abort's cause).
func (pd *pollDesc) wait(abort func() bool) {
	for {
		if pd.state.CompareAndSwap(pdReady, pdIdle) {
			return
		}
		if pd.state.CompareAndSwap(pdIdle, pdWaiting) {
			break
		}
	}
	if abort() && pd.state.CompareAndSwap(pdWaiting, pdIdle) {
		return
	}
	<-pd.ch
}

// pdParks reports whether a parked goroutine is in gopark's "IO wait"
// (polldesc.go) rather than on a channel.
const pdParks = false
