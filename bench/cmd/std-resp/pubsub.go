package main

import "strconv"

// subscribe adds c to channel ch, starting c's message writer on its first
// subscription.
func (s *server) subscribe(c *conn, ch string) {
	if c.subs[ch] {
		return
	}
	if c.subs == nil {
		c.subs = map[string]bool{}
	}
	if c.msgs == nil {
		c.msgs = make(chan []byte, s.queue)
		go c.writeMessages()
	}
	c.subs[ch] = true
	s.psMu.Lock()
	set := s.chans[ch]
	if set == nil {
		set = map[*conn]struct{}{}
		s.chans[ch] = set
	}
	set[c] = struct{}{}
	s.psMu.Unlock()
}

// unsubscribeAll removes c from the channels named (all of its channels
// when names is empty), replying when called for a request (c.wmu held).
func (s *server) unsubscribeAll(c *conn, names [][]byte) {
	reply := names != nil
	if len(names) == 0 {
		if len(c.subs) == 0 && reply {
			c.array(3)
			c.bulk([]byte("unsubscribe"))
			c.null()
			c.int(0)
			return
		}
		for ch := range c.subs {
			names = append(names, []byte(ch))
		}
	}
	for _, name := range names {
		ch := string(name)
		if c.subs[ch] {
			delete(c.subs, ch)
			s.psMu.Lock()
			delete(s.chans[ch], c)
			if len(s.chans[ch]) == 0 {
				delete(s.chans, ch)
			}
			s.psMu.Unlock()
		}
		if reply {
			c.subReply("unsubscribe", name, len(c.subs))
		}
	}
}

func (c *conn) subReply(kind string, ch []byte, n int) {
	c.array(3)
	c.bulk([]byte(kind))
	c.bulk(ch)
	c.int(int64(n))
}

// publish queues msg for every subscriber of ch and returns how many it
// was queued for; a subscriber whose queue is full is disconnected.
func (s *server) publish(ch, msg []byte) int {
	f := make([]byte, 0, 32+len(ch)+len(msg))
	f = append(f, "*3\r\n$7\r\nmessage\r\n$"...)
	f = strconv.AppendInt(f, int64(len(ch)), 10)
	f = append(f, "\r\n"...)
	f = append(f, ch...)
	f = append(f, "\r\n$"...)
	f = strconv.AppendInt(f, int64(len(msg)), 10)
	f = append(f, "\r\n"...)
	f = append(f, msg...)
	f = append(f, "\r\n"...)
	n := 0
	s.psMu.RLock()
	for sub := range s.chans[string(ch)] {
		select {
		case sub.msgs <- f:
			n++
		default:
			sub.dropped.Do(func() { sub.nc.Close() })
		}
	}
	s.psMu.RUnlock()
	return n
}

// writeMessages writes c's messages, flushing when none is waiting.
func (c *conn) writeMessages() {
	for {
		var m []byte
		select {
		case m = <-c.msgs:
		case <-c.done:
			return
		}
		c.wmu.Lock()
		c.w.Write(m)
		for more := true; more; {
			select {
			case m = <-c.msgs:
				c.w.Write(m)
			default:
				more = false
			}
		}
		err := c.w.Flush()
		c.wmu.Unlock()
		if err != nil {
			c.nc.Close()
			return
		}
	}
}
