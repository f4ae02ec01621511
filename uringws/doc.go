// Package uringws is a WebSocket server (RFC 6455, with permessage-deflate
// of RFC 7692) on the event loops of the uringrt runtime.
//
// An http.Handler calls Upgrader.Upgrade with a Handler; the handler's
// OnOpen, OnMessage and OnClose get the connection's events, and
// Conn.WriteMessage, Conn.WritePrepared and Conn.Close may be called from
// any goroutine and from any callback:
//
//	u := &uringws.Upgrader{EnableCompression: true}
//	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
//		u.Upgrade(w, r, uringws.HandlerFuncs{
//			Message: func(c *uringws.Conn, t uringws.MessageType, data []byte) {
//				c.WriteMessage(t, data) // an echo
//			},
//		})
//	})
//
// # Two paths, one parser
//
// Served by uringhttp on io_uring, an upgraded connection moves onto its
// event loop (uringhttp.TakeOver): after the 101, the loop's OnData
// parses its frames from the runtime's receive buffers and calls the
// Handler there. A message that arrived in one frame is unmasked in place
// and handed to OnMessage from the receive buffer itself; a partial frame
// header stays with the runtime (its framing keeps unconsumed input) and
// a fragmented or split message is gathered in a pooled buffer only while
// it is under way. Anywhere else (net/http, or a uringhttp server whose
// runtime uses Go's net) Upgrade hijacks the connection and one goroutine
// per connection reads it with the same parser and calls the same
// Handler.
//
// # What it costs
//
// On the loop path an idle connection holds no goroutine and no buffer:
// its Conn (about 200 bytes), uringhttp's connection state and the
// runtime's. Timers exist only when configured: PingInterval or
// IdleTimeout give the connection one loop timer. permessage-deflate is
// negotiated without context takeover both ways, so every message is
// compressed and decompressed on its own with compressors and
// decompressors taken from pools for the length of one message: an idle
// compressed connection holds no flate state either. The goroutine path
// costs a goroutine and a 4 KiB read buffer per connection, as
// gorilla/websocket on net/http does.
//
// # How handlers run
//
// On the loop path the Handler's methods run on the connection's loop,
// one at a time and in order, between the loop's I/O: they must not block
// (a handler that waits hands the work to a goroutine, which writes with
// WriteMessage). A message's data is valid during OnMessage only. On the
// goroutine path they run on the connection's reading goroutine.
//
// # Writes, flow control and slow consumers
//
// Every message is written as one frame, in one piece: the frames of two
// writers never interleave, and one writer's messages leave in its order.
// On the loop path writes are queued and sent in batches with the loop's
// other output; they never block. Upgrader.WriteBufferLimit bounds what is
// queued for one connection: past it a write returns ErrSlowConsumer with
// nothing queued and the connection open, and the writer decides (drop
// the message, or Close a consumer that stays behind). Conn.Buffered tells
// what is queued, and a Handler that implements Drainer gets OnDrained when
// the queue falls back under half the limit, so a paused producer goes on. The runtime also stops reading a connection whose own
// output backs up, so a client that sends but does not read is slowed by
// TCP flow control. On the goroutine path writes block until the kernel
// takes them, as gorilla/websocket's.
//
// # The protocol
//
// Handshakes are checked as RFC 6455 section 4.2.1 says (405, 400, 426
// with Sec-WebSocket-Version: 13, 403 from CheckOrigin, whose default is
// gorilla's same-origin check). Client frames must be masked, reserved
// bits and opcodes be known, control frames be whole and at most 125
// bytes; violations close with 1002. Text is validated as UTF-8
// incrementally across fragments and fails at the first invalid byte
// (1007); a message past MaxMessageSize (4 MiB by default, counted after
// decompression, which stops at the limit) closes with 1009. A ping is
// answered with a pong carrying its payload. A close frame is answered
// with its code and the server then closes the TCP connection; a close
// the server begins waits up to 5 s for the peer's answer.
// uringhttp.Server.Shutdown sends 1001 Going Away to every websocket and
// waits for them to close, bounded by its context.
//
// # What differs from gorilla/websocket
//
// Events come to a Handler instead of a ReadMessage loop, so no goroutine
// waits per connection. Writes are safe from any goroutine (gorilla allows
// one writer at a time) and, on the loop path, never block. Messages are
// always sent as single frames; there is no NextWriter or NextReader
// streaming. MaxMessageSize has a default (gorilla has none). Compression,
// when enabled, applies to every message, never with context takeover.
package uringws
