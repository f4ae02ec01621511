package main

import (
	"log"
	"time"

	"github.com/uringrt/uringrt/runtime"
)

// queued returns the output bytes queued for c and not yet sent (exact in
// c's own callbacks, up to a loop iteration behind elsewhere).
func queued(c *uringrt.CallbackConn) int { return c.OutboundBuffered() }

// dropGrace is how long a dropped subscriber's queued output may take to
// leave before the connection is closed without it.
const dropGrace = time.Second

// drop disconnects a subscriber that cannot keep up: Close (callable from
// any callback) sends what is queued and closes, and the write timeout
// closes it anyway if that makes no progress for dropGrace. Publishers
// skip the subscriber until its OnClose unsubscribes it.
func (s *server) drop(sub *client, why string) {
	if sub.dropped.CompareAndSwap(false, true) {
		log.Printf("resp: disconnecting subscriber %v: %s", sub.c.RemoteAddr(), why)
		sub.c.SetWriteTimeout(dropGrace)
		sub.c.Close()
	}
}
