//go:build !race || amd64 || arm64

package uringrt

import (
	"sync/atomic"
	"unsafe"
)

// pollDesc is one direction's readiness, in the manner of Go's own
// runtime netpoll pollDesc: a goroutine that got EAGAIN parks on it, and the
// loop's completion batch (a multishot poll CQE) or a deadline or Close
// wakes it. A readiness that arrives while nobody waits is remembered, so no
// wake-up is lost between the nonblock try and the park.
//
// The goroutine parks with the scheduler's own gopark and is woken with
// goready (park.go), as Go's netpoller parks a net.Conn reader: a channel
// costs a lock, a sudog and a second cache line per wake-up, which flat out
// was 4 % of a net.Conn echo server's CPU against Go net's 1.4 %.
type pollDesc struct {
	// state is pdIdle, pdReady, pdWait, or the parked goroutine (a *g
	// as a uintptr: goroutines are never freed, and one parked here is
	// not reused before goready).
	state atomic.Uintptr
}

const (
	pdIdle  = 0 // nobody waits, no readiness pending
	pdReady = 1 // readiness arrived while nobody was parked
	pdWait  = 2 // a goroutine is about to park (between wait's check and gopark's commit)
)

func (pd *pollDesc) init() {}

// notify records readiness: it wakes the parked goroutine, if any, or
// leaves pdReady for the next wait (a goroutine about to park then does
// not). It reports whether it woke one.
func (pd *pollDesc) notify() bool {
	for {
		switch s := pd.state.Load(); s {
		case pdReady:
			return false
		case pdIdle, pdWait:
			if pd.state.CompareAndSwap(s, pdReady) {
				return false
			}
		default:
			if pd.state.CompareAndSwap(s, pdIdle) {
				goready(s, 0)
				return true
			}
		}
	}
}

// interrupt wakes the parked goroutine, if any, or stops one about to
// park, without recording readiness (deadline or Close: the woken goroutine
// re-checks why).
func (pd *pollDesc) interrupt() {
	for {
		switch s := pd.state.Load(); s {
		case pdIdle, pdReady:
			return
		case pdWait:
			if pd.state.CompareAndSwap(pdWait, pdIdle) {
				return
			}
		default:
			if pd.state.CompareAndSwap(s, pdIdle) {
				goready(s, 0)
				return
			}
		}
	}
}

// wait parks until readiness, returning at once if readiness is pending.
// abort is checked after the goroutine is published as about to park, so
// a deadline or Close that raced with the park is never missed: either
// abort sees it, or its interrupt finds pdWait and the park does not
// happen. The caller re-checks abort's cause. One goroutine waits on a
// pollDesc at a time (the fd's rmu or wmu).
func (pd *pollDesc) wait(abort func() bool) {
	for {
		s := pd.state.Load()
		if s == pdReady {
			if pd.state.CompareAndSwap(pdReady, pdIdle) {
				return
			}
			continue
		}
		if s != pdIdle {
			panic("uringrt: two goroutines wait on one pollDesc")
		}
		if pd.state.CompareAndSwap(pdIdle, pdWait) {
			break
		}
	}
	if abort() {
		pd.state.CompareAndSwap(pdWait, pdIdle)
		return
	}
	gopark(pdCommit, unsafe.Pointer(pd), waitReasonIOWait, traceBlockNet, 1)
	// Woken (state reset by the waker), or the commit found readiness
	// or an interrupt: a readiness left pending is for this wake-up.
	pd.state.CompareAndSwap(pdReady, pdIdle)
}

// pdParks reports whether a parked goroutine is in gopark's "IO wait"
// (polldesc_chan.go parks on a channel).
const pdParks = true
