package uringws

// Handler gets a connection's events. On the loop path its methods run on
// the connection's event loop, one at a time and in order, so they must
// not block (hand long work to a goroutine, which may write with
// WriteMessage); on the goroutine path (net/http, or a runtime without
// io_uring) they run on the connection's reading goroutine.
type Handler interface {
	// OnOpen is called once, before any other method: within Upgrade,
	// on its goroutine, after the 101 answer was queued (input that
	// arrives meanwhile waits for it to return).
	OnOpen(c *Conn)
	// OnMessage is called with each whole message (fragments joined,
	// decompressed, text checked as UTF-8). data is valid during the
	// call only: copy what must outlive it.
	OnMessage(c *Conn, t MessageType, data []byte)
	// OnClose is called once when the connection is gone, with the close
	// code and reason of the peer's close frame; 1005 for a close frame
	// without a status, 1006 when the connection ended without one, or
	// the code the server failed the connection with (1002 protocol
	// error, 1007 invalid UTF-8, 1009 message too big).
	OnClose(c *Conn, code int, reason string)
}

// HandlerFuncs is a Handler made of functions; a nil one is skipped.
type HandlerFuncs struct {
	Open    func(c *Conn)
	Message func(c *Conn, t MessageType, data []byte)
	Close   func(c *Conn, code int, reason string)
}

// OnOpen calls Open.
func (f HandlerFuncs) OnOpen(c *Conn) {
	if f.Open != nil {
		f.Open(c)
	}
}

// OnMessage calls Message.
func (f HandlerFuncs) OnMessage(c *Conn, t MessageType, data []byte) {
	if f.Message != nil {
		f.Message(c, t, data)
	}
}

// OnClose calls Close.
func (f HandlerFuncs) OnClose(c *Conn, code int, reason string) {
	if f.Close != nil {
		f.Close(c, code, reason)
	}
}

// Drainer is implemented by a Handler that wants to know when a
// connection's queued output has drained (on the loop path): once the
// bytes queued have passed half of Upgrader.WriteBufferLimit (a write that
// failed with ErrSlowConsumer did), OnDrained is called on the loop when
// they fall back under it, so a producer that paused can go on.
type Drainer interface {
	OnDrained(c *Conn)
}
