package sched_test

import (
	"context"
	"fmt"
	"time"

	"github.com/uringrt/uringrt/sched"
)

func ExampleFixedPool_Submit() {
	p := sched.NewFixed(sched.Options{Workers: 3, Name: "example"})
	results := make(chan int, 3)
	for i := 1; i <= 3; i++ {
		if _, err := p.Submit(func() { results <- i * i }); err != nil {
			panic(err)
		}
	}
	total := 0
	for range 3 {
		total += <-results
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fmt.Println(total, p.Close(ctx, sched.Drain))
	// Output: 14 <nil>
}

func ExampleFixedPool_SubmitKey() {
	p := sched.NewFixed(sched.Options{Workers: 4})
	// All works of one key (say, one connection) run on one worker, in
	// order; different keys run in parallel.
	var log []string // touched only by key 42's worker
	for _, msg := range []string{"open", "read", "write", "close"} {
		if _, err := p.SubmitKey(42, func() { log = append(log, msg) }); err != nil {
			panic(err)
		}
	}
	// Close(Drain) returns after every queued work ran.
	if err := p.Close(context.Background(), sched.Drain); err != nil {
		panic(err)
	}
	fmt.Println(log)
	// Output: [open read write close]
}

func ExampleFixedPool_Cancel() {
	p := sched.NewFixed(sched.Options{Workers: 1})
	started, release := make(chan struct{}), make(chan struct{})
	busy, _ := p.Submit(func() { close(started); <-release }) // occupies the only worker
	later, _ := p.Submit(func() { fmt.Println("never printed") })

	fmt.Println(p.Cancel(later)) // not started: it will never run
	fmt.Println(p.Cancel(later))
	<-started
	fmt.Println(p.Cancel(busy)) // running: not interrupted
	close(release)

	if err := p.Close(context.Background(), sched.Drain); err != nil {
		panic(err)
	}
	fmt.Println(later.State(), busy.State())
	// Output:
	// Cancelled
	// AlreadyCancelled
	// Started
	// cancelled done
}
