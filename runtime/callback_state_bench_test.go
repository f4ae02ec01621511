package uringrt

import "testing"

// BenchmarkCallbackHold: what a Write from a connection's own callback
// pays to know it is in that callback: the goroutine-identity check (curG
// against the callback's g) against the compare-and-swap and store it
// replaced on amd64 and arm64, and a callback's enter and leave.
func BenchmarkCallbackHold(b *testing.B) {
	c := &CallbackConn{}
	b.Run("identity", func(b *testing.B) {
		c.cbG.Store(curG())
		for range b.N {
			if c.cbG.Load() != curG() {
				b.Fatal("not held")
			}
		}
		c.cbG.Store(0)
	})
	b.Run("cas", func(b *testing.B) {
		c.cb.Store(cbIn)
		for range b.N {
			if !c.cb.CompareAndSwap(cbIn, cbHeld) {
				b.Fatal("not held")
			}
			c.cb.Store(cbIn)
		}
		c.cb.Store(cbIdle)
	})
	b.Run("enter-leave", func(b *testing.B) {
		for range b.N {
			c.enterCB()
			c.leaveCB()
		}
	})
}
