// Command ctxsw-floor measures the context switches a Go process takes when
// one goroutine never blocks (it spins, doing nothing else): the floor set
// by Go's runtime itself (sysmon's wake-ups, and the forced preemption of a
// goroutine that runs for more than 10 ms, which for a goroutine locked to
// its thread is a hand-off of the P between two threads). A busy server
// built on Go cannot take fewer switches per second than this.
//
//	GOMAXPROCS=1 taskset -c 0 ctxsw-floor -d 4s -locked
//
// It prints one JSON line: {"locked":..,"seconds":..,"voluntary":..,
// "involuntary":..,"per_second":..}.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"
)

// Result is the switches counted while the goroutine spun.
type Result struct {
	Locked      bool    `json:"locked"`
	Seconds     float64 `json:"seconds"`
	Voluntary   int64   `json:"voluntary"`
	Involuntary int64   `json:"involuntary"`
	PerSecond   float64 `json:"per_second"`
}

func main() {
	d := flag.Duration("d", 4*time.Second, "how long to spin")
	locked := flag.Bool("locked", false, "lock the spinning goroutine to its OS thread (as a uringrt loop is)")
	flag.Parse()
	if *d <= 0 || *d > time.Hour {
		fmt.Fprintln(os.Stderr, "ctxsw-floor: -d must be in (0, 1h]")
		os.Exit(2)
	}
	json.NewEncoder(os.Stdout).Encode(measure(*d, *locked))
}

// measure spins one goroutine for d and counts the process's switches.
func measure(d time.Duration, locked bool) Result {
	done := make(chan struct{})
	var a, b syscall.Rusage
	go func() {
		if locked {
			runtime.LockOSThread()
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &a)
		start := time.Now()
		for time.Since(start) < d {
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &b)
		close(done)
	}()
	<-done
	r := Result{Locked: locked, Seconds: d.Seconds(), Voluntary: b.Nvcsw - a.Nvcsw, Involuntary: b.Nivcsw - a.Nivcsw}
	r.PerSecond = float64(r.Voluntary+r.Involuntary) / r.Seconds
	return r
}
