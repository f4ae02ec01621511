package main

import (
	"strconv"
	"testing"
	"time"
)

// TestSubscriptionsScale: subscribing, unsubscribing and leaving cost the
// same per subscription however many a client has, and however many
// clients a channel has: one client with 1M channels, and 2000 clients
// of one channel that a non-subscriber unsubscribes 1M times, finish
// (each took minutes when these walked the client's or the channel's
// list, holding the loop and every client on it).
func TestSubscriptionsScale(t *testing.T) {
	const n = 1 << 20
	done := make(chan struct{})
	go func() {
		defer close(done)
		ps := newPubsub(false)
		cl := &client{}
		for i := 0; i < n; i++ {
			if got := ps.subscribe(cl, []byte(strconv.Itoa(i))); got != i+1 {
				t.Errorf("subscribe %d: count %d", i, got)
				return
			}
		}
		if got := ps.subscribe(cl, []byte("7")); got != n {
			t.Errorf("subscribing again: count %d, want %d", got, n)
		}
		names := make([][]byte, n/2)
		for i := range names {
			names[i] = []byte(strconv.Itoa(2 * i))
		}
		ps.unsubscribeAll(cl, names, nil)
		if len(cl.chans) != n/2 || len(ps.chans) != n/2 {
			t.Errorf("after unsubscribing half: %d channels, %d in the registry", len(cl.chans), len(ps.chans))
		}
		ps.leave(cl)
		if len(cl.chans) != 0 || len(ps.chans) != 0 {
			t.Errorf("after leaving: %d channels, %d in the registry", len(cl.chans), len(ps.chans))
		}

		subs := make([]*client, 2000)
		for i := range subs {
			subs[i] = &client{}
			ps.subscribe(subs[i], []byte("busy"))
		}
		other := &client{}
		busy := [][]byte{[]byte("busy")}
		for i := 0; i < n; i++ {
			ps.unsubscribeAll(other, busy, nil)
		}
		for i := 0; i < n/1000; i++ { // a subscriber leaving and coming back
			ps.unsubscribeAll(subs[0], busy, nil)
			ps.subscribe(subs[0], busy[0])
		}
		for i, c := range subs {
			ps.leave(c)
			if ch := ps.chans["busy"]; i < len(subs)-1 && len(ch.subs) != len(subs)-1-i {
				t.Errorf("after %d left: %d subscribers", i+1, len(ch.subs))
				return
			}
		}
		if len(ps.chans) != 0 {
			t.Errorf("%d channels left", len(ps.chans))
		}
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a hang, not a timing bound
		t.Fatal("subscriptions did not finish in 2 minutes")
	}
}
