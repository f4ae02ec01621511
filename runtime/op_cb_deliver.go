package uringrt

// Handing a callback recv's bytes to the handler: a bundle's runs of
// adjacent provided buffers, an offer of the buffers for lending, and the
// hand-off to a MayBlocker's worker.

// deliverBundle hands a bundle CQE's n bytes, from the buffers starting at
// id, to the handler: one OnData per run of full buffers adjacent in memory
// (one call for the whole bundle when they were recycled in order), each
// run's buffers recycled after its call.
func (c *CallbackConn) deliverBundle(id uint16, n int) {
	br := c.l.bufRing
	bufs := br.Bundle(id, n, c.l.bundleBufs[:0])
	size := int(br.Size())
	for i := 0; i < len(bufs); {
		j, run := i+1, bufs[i].Len
		for j < len(bufs) && bufs[j-1].Len == size && br.Contiguous(bufs[j-1].ID, bufs[j].ID) {
			run += bufs[j].Len
			j++
		}
		lent := false
		if !c.closing {
			lent = c.deliverOffered(br.Span(bufs[i].ID, run), bufs[i].ID, uint16(j-i))
		}
		if !lent {
			for _, b := range bufs[i:j] {
				br.Recycle(b.ID)
			}
		}
		i = j
	}
	c.l.bundleBufs = bufs[:0]
}

func (o *op) bufferID() (uint16, bool) {
	return uint16(o.flags >> 16), o.flags&1 != 0
}

// deliverOffered is deliver of data held in provided buffers first..
// first+n-1, which OnData's Writes may lend (lend.go); it reports whether
// one did, so that the buffers are recycled when sent, not now.
func (c *CallbackConn) deliverOffered(data []byte, first, n uint16) bool {
	if c.blocking || c.l.lendCap == 0 {
		c.deliver(data)
		return false
	}
	c.l.offer(data, first, n)
	c.deliver(data)
	return c.l.endOffer()
}

func (c *CallbackConn) deliverPlain(data []byte) {
	if c.blocking {
		cp := append([]byte(nil), data...)
		c.noteBlockedInput(len(cp)) // budget.go
		c.l.rt.pool.GoKey(uint64(c.fd.fd), func() {
			c.onData(cp)
			c.blockedInputDone(len(cp))
		})
		return
	}
	c.rtAllow = len(data) // callback_bounds.go: what OnData may echo past MaxBufferedBytes
	c.onData(data)        // callback_frame.go
	c.rtAllow = 0
}
