package uringws

import "time"

// tickInterval is the period of a connection's keep-alive and idle
// checks, or 0 when neither is configured (the connection then has no
// timer at all).
func (u *Upgrader) tickInterval() time.Duration {
	iv := u.PingInterval
	if d := u.IdleTimeout / 4; d > 0 && (iv <= 0 || d < iv) {
		iv = d
	}
	return max(iv, 0)
}

// tick runs every tickInterval (on the loop, or on a timer goroutine on
// the goroutine path): it sends the keep-alive ping, closes a peer that
// sent nothing since the last ping, and closes a connection idle for
// IdleTimeout.
func (c *Conn) tick(now time.Time) {
	if c.state.Load()&(stCloseSent|stCloseRecv) != 0 {
		return
	}
	if c.u.IdleTimeout > 0 {
		if c.active.Swap(false) {
			c.idleSince.Store(now.UnixNano())
		} else if s := c.idleSince.Load(); s != 0 && now.UnixNano()-s >= int64(c.u.IdleTimeout) {
			c.Close(CloseGoingAway, "idle timeout")
			return
		} else if s == 0 {
			c.idleSince.Store(now.UnixNano())
		}
	}
	if p := c.u.PingInterval; p > 0 {
		last := c.pingAt.Load()
		if last != 0 && now.UnixNano()-last < int64(p)*3/4 {
			return // ticks for the idle check come faster than pings
		}
		if last != 0 && !c.seen.Swap(false) {
			// Nothing arrived, not even the pong, since the last ping.
			c.state.Or(stCloseRecv)
			c.shut()
			return
		}
		c.seen.Store(false)
		c.pingAt.Store(now.UnixNano())
		var f [2]byte
		c.send(appendHeader(f[:0], true, 0, opPing, 0), false)
	}
}
