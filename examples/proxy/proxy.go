package main

import (
	"context"
	"errors"
	"log"
	"sync/atomic"
	"time"

	"github.com/uringrt/uringrt/runtime"
)

// Proxy forwards every connection Serve accepts to Upstream over a second
// callback connection, both ways, with the callback API alone.
//
// Flow control: what one side's OnData receives is written to the other
// side (a write to another connection copies the bytes and posts them to
// that connection's loop). When the destination's queued output passes
// HighWater bytes the source stops reading (PauseRead); the destination's
// OnDrained, called when its queue falls to LowWater, resumes it
// (ResumeRead). A paused connection's socket receive buffer fills and TCP
// slows its peer, so a fast upstream behind a slow client costs the proxy
// about HighWater per connection, not the whole stream.
//
// Either side's end (EOF, error, close) closes the other once what is
// queued for it has been sent. A write refused with ErrWriteBufferFull
// (only when one OnData brings more than Config.MaxWriteBuffer less
// HighWater) closes the pair.
type Proxy struct {
	Runtime   *uringrt.Runtime
	Upstream  string        // host:port to dial for each accepted connection
	HighWater int           // bytes queued for a destination past which its source pauses
	LowWater  int           // bytes under which the destination's OnDrained resumes the source
	DialWait  time.Duration // bound on each upstream dial
}

// pair is the two connections of one proxied client: the accepted one and
// its upstream.
type pair struct {
	p      *Proxy
	client *uringrt.CallbackConn
	up     atomic.Pointer[uringrt.CallbackConn]
}

// Handler returns the handler to Serve the proxy's listener with.
func (p *Proxy) Handler() uringrt.Handler {
	return uringrt.HandlerFuncs{
		Open: func(c *uringrt.CallbackConn) {
			// Nothing to forward to yet: read the client once the
			// upstream is connected.
			c.PauseRead()
			c.SetLowWater(p.LowWater)
			s := &pair{p: p, client: c}
			c.SetValue(s)
			go s.dial() // a dial blocks: never on the loop
		},
		Data: func(c *uringrt.CallbackConn, data []byte) {
			s := c.Value().(*pair)
			s.forward(c, s.up.Load(), data)
		},
		Drained: func(c *uringrt.CallbackConn) {
			if up := c.Value().(*pair).up.Load(); up != nil {
				up.ResumeRead() // the client drained: read the upstream again
			}
		},
		Close: func(c *uringrt.CallbackConn, err error) {
			if up := c.Value().(*pair).up.Load(); up != nil {
				up.Close()
			}
		},
	}
}

// dial connects the upstream side and starts reading the client.
func (s *pair) dial() {
	ctx, cancel := context.WithTimeout(context.Background(), s.p.DialWait)
	defer cancel()
	_, err := s.p.Runtime.DialCallback(ctx, "tcp", s.p.Upstream, uringrt.HandlerFuncs{
		Open: func(up *uringrt.CallbackConn) {
			up.SetLowWater(s.p.LowWater)
			s.up.Store(up)
			if s.client.ResumeRead() != nil {
				up.Close() // the client is gone already
			}
		},
		Data: func(up *uringrt.CallbackConn, data []byte) {
			s.forward(up, s.client, data)
		},
		Drained: func(up *uringrt.CallbackConn) {
			s.client.ResumeRead() // the upstream drained: read the client again
		},
		Close: func(up *uringrt.CallbackConn, err error) {
			s.client.Close() // after what is queued for the client is sent
		},
	})
	if err != nil {
		log.Printf("proxy: dial %s: %v", s.p.Upstream, err)
		s.client.Close()
	}
}

// forward writes what src received to dst and pauses src while dst's
// output is over the high-water mark.
func (s *pair) forward(src, dst *uringrt.CallbackConn, data []byte) {
	if _, err := dst.Write(data); err != nil {
		if errors.Is(err, uringrt.ErrWriteBufferFull) {
			log.Printf("proxy: %v: output over MaxWriteBuffer, closing", dst.RemoteAddr())
		}
		src.Close()
		return
	}
	if dst.OutboundBuffered() > s.p.HighWater {
		src.PauseRead()
		// dst may have drained before the pause: then no OnDrained
		// is coming for this episode.
		if dst.OutboundBuffered() <= s.p.LowWater {
			src.ResumeRead()
		}
	}
}
