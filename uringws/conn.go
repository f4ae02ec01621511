package uringws

import (
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// Conn is one WebSocket connection. Its methods may be called from any
// goroutine and from any callback.
type Conn struct {
	u     *Upgrader
	h     Handler
	cc    *uringrt.CallbackConn // on the loop (nil on the goroutine path)
	nc    *netConn              // on the goroutine path
	r     reader
	carry *[]byte // input kept by the connection itself (bytes handed over outside OnData)
	timer *uringrt.LoopTimer

	state     atomic.Uint32
	seen      atomic.Bool  // input arrived since the last keep-alive tick
	active    atomic.Bool  // a message went either way since the last idle tick
	idleSince atomic.Int64 // ns when the connection was last seen idle (tick)
	pingAt    atomic.Int64 // ns of the last keep-alive ping
	deflate   bool
	code      int32 // the close code OnClose reports
	reason    string
	subproto  string
	value     any
}

// connection states (Conn.state bits)
const (
	stCloseSent uint32 = 1 << iota // our close frame is queued: no more writes
	stCloseRecv                    // the peer's close frame arrived (or reading failed): no more input
	stClosed                       // OnClose ran

	// The bits from writerInc up count the data writes under way, so
	// that the close frame goes out after them (RFC 6455 section 5.5.1:
	// no data frame after it).
	writerInc uint32 = 1 << 8
)

// beginWrite counts a data write in, or refuses it once the close frame
// was sent.
func (c *Conn) beginWrite() bool {
	if c.state.Add(writerInc)&stCloseSent != 0 {
		c.state.Add(^(writerInc - 1))
		return false
	}
	return true
}

func (c *Conn) endWrite() { c.state.Add(^(writerInc - 1)) }

// waitWriters waits for the data writes under way to be queued (on the
// loop path they never block; on the goroutine path a write the peer
// does not take is given up on after a while).
func (c *Conn) waitWriters() {
	deadline := time.Now().Add(100 * time.Millisecond)
	for c.state.Load() >= writerInc && time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

// closeWait bounds how long a close frame we sent waits for the peer's
// before the TCP connection is closed anyway.
const closeWait = 5 * time.Second

// Subprotocol returns the subprotocol chosen at the handshake, or "".
func (c *Conn) Subprotocol() string { return c.subproto }

// Compressed reports whether permessage-deflate was negotiated.
func (c *Conn) Compressed() bool { return c.deflate }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr {
	if c.cc != nil {
		return c.cc.RemoteAddr()
	}
	return c.nc.c.RemoteAddr()
}

// LocalAddr returns the server's address of the connection.
func (c *Conn) LocalAddr() net.Addr {
	if c.cc != nil {
		return c.cc.LocalAddr()
	}
	return c.nc.c.LocalAddr()
}

// SetValue stores a value of the caller's with the connection; Value
// returns it. They are not synchronized: use them in the connection's
// callbacks, or with a lock of the caller's.
func (c *Conn) SetValue(v any) { c.value = v }

// Value returns what SetValue stored, or nil.
func (c *Conn) Value() any { return c.value }

// Buffered returns the bytes queued for the connection and not yet sent
// (on the loop path; 0 on the goroutine path, whose writes block).
func (c *Conn) Buffered() int {
	if c.cc != nil {
		return c.cc.OutboundBuffered()
	}
	return 0
}

// WriteMessage sends one message as a single frame (compressed when
// permessage-deflate was negotiated), from any goroutine or callback;
// the frame leaves whole, never interleaved with another writer's.
// Errors: ErrSlowConsumer past Upgrader.WriteBufferLimit (nothing
// queued, the connection stays open), ErrCloseSent after Close,
// ErrClosed once the connection is gone, ErrControlTooLong,
// ErrBadMessageType.
func (c *Conn) WriteMessage(t MessageType, data []byte) error {
	op := byte(t)
	switch t {
	case TextMessage, BinaryMessage:
	case PingMessage, PongMessage:
		if len(data) > maxControlPayload {
			return ErrControlTooLong
		}
	default:
		return ErrBadMessageType
	}
	if !c.beginWrite() {
		return ErrCloseSent
	}
	defer c.endWrite()
	var bp *[]byte
	if c.deflate && op < opClose {
		bp = compressFrame(op, data)
	} else {
		bp = getBuf(headerSize(len(data)) + len(data))
		*bp = append(appendHeader(*bp, true, 0, op, len(data)), data...)
	}
	err := c.send(*bp, op < opClose)
	putBuf(bp)
	if err == nil && op < opClose {
		c.active.Store(true)
	}
	return err
}

// send writes one whole frame; bounded applies WriteBufferLimit.
func (c *Conn) send(b []byte, bounded bool) error {
	if c.cc == nil {
		return c.nc.write(b)
	}
	if bounded {
		if q := c.cc.OutboundBuffered(); q > 0 && q+len(b) > c.u.writeLimit() {
			return ErrSlowConsumer
		}
	}
	_, err := c.cc.Write(b)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, uringrt.ErrWriteBufferFull):
		return ErrSlowConsumer
	case errors.Is(err, net.ErrClosed):
		return ErrClosed
	}
	return err
}

// Close starts the closing handshake: it sends a close frame with code
// and reason (at most 123 bytes; code 0 sends a close frame without a
// status) and closes the TCP connection when the peer's close frame
// comes back, or after 5 s. OnClose follows. Errors: ErrCloseSent when a
// close frame was sent already, ErrBadCloseCode.
func (c *Conn) Close(code int, reason string) error {
	if code != 0 && (!validReceivedCloseCode(code) || code == CloseNoStatusReceived) {
		return ErrBadCloseCode
	}
	if len(reason) > maxControlPayload-2 {
		reason = reason[:maxControlPayload-2]
	}
	if !c.sendClose(code, reason) {
		return ErrCloseSent
	}
	if c.state.Load()&stCloseRecv != 0 {
		c.shut()
		return nil
	}
	c.after(closeWait, c.shut)
	return nil
}

// sendClose queues a close frame once; false when one was sent already.
func (c *Conn) sendClose(code int, reason string) bool {
	for {
		s := c.state.Load()
		if s&stCloseSent != 0 {
			return false
		}
		if c.state.CompareAndSwap(s, s|stCloseSent) {
			break
		}
	}
	c.waitWriters()
	var f [maxControlPayload + 2]byte
	b := f[:0]
	if code != 0 {
		b = appendHeader(b, true, 0, opClose, 2+len(reason))
		b = binary.BigEndian.AppendUint16(b, uint16(code))
		b = append(b, reason...)
	} else {
		b = appendHeader(b, true, 0, opClose, 0)
	}
	if c.cc == nil {
		c.nc.writeClose(b)
		return true
	}
	c.send(b, false)
	return true
}

// shut closes the TCP connection once what is queued is sent.
func (c *Conn) shut() {
	if c.cc != nil {
		c.cc.Close()
		return
	}
	c.nc.c.Close()
}

// after runs f after d, on the connection's loop when it has one.
func (c *Conn) after(d time.Duration, f func()) {
	if c.cc != nil {
		c.cc.AfterFunc(d, func(*uringrt.CallbackConn) { f() })
		return
	}
	time.AfterFunc(d, f)
}

// fail answers a protocol failure: a close frame with its code, then
// the end of the connection.
func (c *Conn) fail(err error) {
	code := CloseProtocolError
	var ce *closeError
	if errors.As(err, &ce) {
		code = ce.code
	}
	c.state.Or(stCloseRecv)
	if c.code == 0 {
		c.code = int32(code)
	}
	c.sendClose(code, "")
	c.shut()
}

// onMessage: a message arrived.
func (c *Conn) onMessage(t MessageType, p []byte) {
	c.active.Store(true)
	c.h.OnMessage(c, t, p)
}

// onControl answers a ping, notes a pong, and completes a close.
func (c *Conn) onControl(op byte, p []byte) (bool, error) {
	switch op {
	case opPing:
		if c.state.Load()&stCloseSent == 0 {
			var f [maxControlPayload + 2]byte
			c.send(append(appendHeader(f[:0], true, 0, opPong, len(p)), p...), false)
		}
		return false, nil
	case opPong:
		return false, nil
	}
	code := CloseNoStatusReceived
	reason := ""
	if len(p) == 1 {
		return true, errProto("close frame of 1 byte")
	}
	if len(p) >= 2 {
		code = int(binary.BigEndian.Uint16(p))
		if !validReceivedCloseCode(code) {
			return true, errProto("invalid close code")
		}
		if !validUTF8(p[2:]) {
			return true, errUTF8
		}
		reason = string(p[2:])
	}
	c.state.Or(stCloseRecv)
	c.code, c.reason = int32(code), reason
	if code == CloseNoStatusReceived {
		c.sendClose(0, "")
	} else {
		c.sendClose(code, "")
	}
	// The server closes the TCP connection first (RFC 6455 section 7.1.1).
	c.shut()
	return true, nil
}

// closed reports the end of the connection to the handler, once.
func (c *Conn) closed() {
	if c.state.Or(stClosed)&stClosed != 0 {
		return
	}
	c.r.reset()
	if c.carry != nil {
		putBuf(c.carry)
		c.carry = nil
	}
	code := int(c.code)
	if code == 0 {
		code = CloseAbnormalClosure
	}
	c.h.OnClose(c, code, c.reason)
}

// netConn is the goroutine path's connection: writes go straight to the
// net.Conn, one frame at a time.
type netConn struct {
	c  net.Conn
	mu sync.Mutex
}

// writeClose writes the close frame without blocking its caller on a
// peer that reads nothing: when another frame's write still holds the
// connection after 100 ms, that peer takes nothing, and the TCP
// connection is closed (which ends that write); the close frame's own
// write gives up after closeWait.
func (n *netConn) writeClose(b []byte) {
	deadline := time.Now().Add(100 * time.Millisecond)
	for !n.mu.TryLock() {
		if time.Now().After(deadline) {
			n.c.Close()
			return
		}
		time.Sleep(time.Millisecond)
	}
	n.c.SetWriteDeadline(time.Now().Add(closeWait))
	n.c.Write(b)
	n.mu.Unlock()
}

func (n *netConn) write(b []byte) error {
	n.mu.Lock()
	_, err := n.c.Write(b)
	n.mu.Unlock()
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	return nil
}
