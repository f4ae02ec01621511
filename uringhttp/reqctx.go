package uringhttp

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"
)

// reqContext is a request's context: done when the request ends or its
// client goes away (Err context.Canceled), or when the connection's
// context is (its Err), as the context net/http's server gives a
// request. It is allocated with the request's URL in one object, where
// context.WithCancel costs two; its Done channel is made only when asked
// for. It implements AfterFunc, so a context derived from it (WithCancel,
// WithTimeout, AfterFunc) registers with it instead of starting a
// goroutine to watch it.
type reqContext struct {
	parent context.Context
	mu     sync.Mutex
	done   chan struct{} // at the first Done, or closedChan once done first
	err    error
	afters []*afterFunc
	stopP  func() bool // the registration with a parent that can be done
}

type afterFunc struct{ f func() }

// reqAlloc is what a request allocates besides its http.Request and
// header: its context and its URL.
type reqAlloc struct {
	ctx reqContext
	url url.URL
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *reqContext) init(parent context.Context) {
	c.parent = parent
	pd := parent.Done()
	if pd == nil {
		return
	}
	select {
	case <-pd:
		c.err, c.done = parent.Err(), closedChan
	default:
		c.stopP = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
	}
}

func (c *reqContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *reqContext) Done() <-chan struct{} {
	c.mu.Lock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	d := c.done
	c.mu.Unlock()
	return d
}

func (c *reqContext) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	return err
}

func (c *reqContext) Value(key any) any { return c.parent.Value(key) }

func (c *reqContext) String() string { return fmt.Sprint(c.parent) + ".WithCancel" }

// AfterFunc arranges for f to run in its own goroutine once c is done (at
// once if it is); stop reports whether it kept f from running (context's
// afterFuncer).
func (c *reqContext) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.afters = append(c.afters, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.afters {
			if x == a {
				c.afters = append(c.afters[:i], c.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// cancel makes c done with err (the first call counts).
func (c *reqContext) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
	afters, stop := c.afters, c.stopP
	c.afters, c.stopP = nil, nil
	c.mu.Unlock()
	for _, a := range afters {
		go a.f()
	}
	if stop != nil {
		stop()
	}
}
