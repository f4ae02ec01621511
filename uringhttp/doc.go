// Package uringhttp serves HTTP/1.1 to any http.Handler on the callback API
// of a uringrt runtime: requests are read and parsed on the runtime's event
// loops, handlers run on those loops between their batches (moving to a
// goroutine of their own when they block) or on the server's goroutines,
// and responses leave through each connection's output queue in batches.
//
//	rt, _ := uringrt.New(uringrt.Config{})
//	ln, _ := rt.Listen("tcp", ":8080")
//	srv := &uringhttp.Server{Handler: mux} // Serve uses ln's runtime
//	go srv.Serve(ln)
//	...
//	srv.Shutdown(ctx)
//
// # What it costs
//
// An idle keep-alive connection holds one small struct: no goroutine, no
// read or write buffer, no timer until its timeout is due. Bytes that
// arrive while a request is served, and a response being written, use
// pooled 4 KiB buffers that go back when the connection is idle again; an
// upload's input grows past 4 KiB once, to what reading holds at most (see
// Flow control), and goes to the garbage collector when the body is read.
// What a connection has queued for its client is bounded by
// Server.MaxQueuedOutput (32 KiB by default). The runtime's pools of free
// output chunks and stream-mode receive buffers, which a burst of
// connections or a large transfer grows, are dropped once a second, so
// memory comes back after them; each event loop's provided receive
// buffers (4 MiB by default) stay resident once its receives have cycled
// through them, a cost per loop, not per connection. A request allocates
// what net/http's does for its http.Request, its Header and its context,
// and little else: the head is copied once into a string that the method,
// URL, header values and Host share. The search for a head's end resumes
// where the last read left it, so a head that arrives in small pieces
// costs its length once; a head over 64 KiB is parsed by the goroutine
// that will serve it rather than on the loop, whose other connections
// would wait for its parse.
//
// # How handlers are run, and why
//
// By default a handler runs on the event loop that parsed its request,
// once the loop has read what its batch of completions brought
// (uringrt.CallbackConn.RunOnLoop): no goroutine hand-off per request, and
// the answers of a batch leave together in the loop's next submission,
// as they would from a server written for the callback API. A handler
// must not stall the loop's other connections, and most handlers can
// block somewhere (a database call, a lock, a sleep), so the loop is not
// tied to its goroutine: a handler about to wait for its request's body,
// for its client to read what it wrote, or that hijacks its connection
// first hands the loop to a new goroutine, and the runtime does the same
// for a handler that has not returned after one to two milliseconds (when
// a P is free to notice: with GOMAXPROCS=1 and a handler that computes,
// at Go's forced preemption, about 10 ms). The handler then finishes on
// its own goroutine and the loop goes on; the handlers queued behind it
// run off the loop, and for a while (8 ms, longer while such takeovers
// keep coming) new requests go to the server's goroutines. Handlers queued
// together hold the loop for about a millisecond between them, the rest
// then running off it. After a handler whose run took longer than half a
// millisecond the server also sends its next 256 requests to its
// goroutines, so handlers that block on every request pay for a takeover
// now and then, not every time. Server.OffLoopHandlers sends every
// request there. A handler that ends its goroutine (runtime.Goexit) gets
// its connection closed, as in net/http.
//
// The server's goroutines take the requests queued for them one after
// another (for each, also the requests the client pipelined behind it, in
// order) and park when none is left; one parked for 2 s ends. Whenever
// requests wait, at least one goroutine is free to take them: one that
// takes a request while others wait and no other is free wakes another
// first (or starts one). The runtime's fixed worker pool hashed by
// connection was not chosen because a worker blocked by one handler
// stalls every connection hashed to it. A goroutine started per request
// was measured: its stack, grown by copying on each new goroutine, took
// 21 % of the CPU of a 13-byte answer under wrk; a kept goroutine has its
// stack grown already.
//
// # Flow control
//
// Request.Body streams: the handler reads bytes as they arrive, and the
// connection stops being read while 64 KiB wait unread, so an upload of any
// size holds one input buffer of 64 KiB and what the last receive brought
// (128 KiB at most). Output: a connection queues at most
// Server.MaxQueuedOutput (32 KiB by default) beyond what the kernel's
// socket buffer took; a handler's Write past it (the ResponseWriter's, or
// a hijacked connection's) waits until the client has read enough, as a
// net/http handler waits for its socket. A slow or non-reading client
// thus holds that much of the server's memory, its handler takes as long
// as the client takes to read (an access log's duration is the client's,
// as on net/http), and one connection's backlog never holds up another's:
// the runtime-wide cap (uringrt.Config.MaxBufferedBytes) is far from
// reach. A handler running on the event loop hands the loop over before it
// waits. A client that pipelines requests and reads no answer is served
// until its answers fill the queue; then its handler waits, its unread
// input reaches 64 KiB and the connection stops being read, as net/http's
// does by construction.
//
// # What differs from net/http
//
//   - HTTPS (ServeTLS, ListenAndServeTLS) is served on the loops: the
//     handshake on a goroutine once the ClientHello arrived whole, bounded
//     by the smallest of ReadHeaderTimeout, ReadTimeout and WriteTimeout
//     (none without them, as net/http), then HTTP/1.1 records decrypted
//     and sealed on the loop; an idle HTTPS connection holds no goroutine
//     and no record buffer. HTTP/2 (ALPN "h2") is golang.org/x/net/http2's
//     server on the connection's *tls.Conn, with a goroutine per
//     connection as in net/http. ConnState and ConnContext get the
//     connection as a net.Conn that is not a *tls.Conn (r.TLS carries the
//     state); HTTP/2 without TLS (h2c) is not served.
//   - Timeouts are applied by one timer of the connection's event loop,
//     armed when the connection enters a phase with a deadline and none is
//     armed, and re-armed by itself for what is left when it fires: it
//     fires when the deadline is due (within a loop iteration), and a
//     request pays two clock reads, no timer operation. A ReadHeaderTimeout
//     sends what net/http's sends: nothing, or 400 when the bytes received
//     end in a partial line that net/http's line reader returns whole at
//     its deadline and that fails as a request line or a header line.
//     Past ReadTimeout, a body read that has to wait for bytes
//     fails; bytes that had arrived before are still read (net/http fails
//     a read of arrived bytes too when its connection's buffer had not
//     taken them in).
//     WriteTimeout bounds the handler's writes, not the sending of what
//     they queued: output queued before it passed (up to
//     Server.MaxQueuedOutput, 32 KiB by default) still goes to a client
//     that reads slowly, where net/http's deadline, on the socket, cuts
//     the response at what the kernel had taken.
//     A read or write deadline the handler sets through
//     http.ResponseController replaces ReadTimeout or WriteTimeout for its
//     request, as on net/http.
//   - http.MaxBytesReader's limit closes the connection after the response
//     (as net/http does) when the handler assigned the reader to
//     Request.Body; a limit hit through a reader kept elsewhere is not
//     seen (net/http learns of it through an unexported method of its own
//     ResponseWriter). So behind http.MaxBytesHandler, which limits a copy
//     of the request, a body over the limit gets an answer without
//     "Connection: close": the rest of the body (up to 256 KiB) is read and
//     dropped and the connection kept, serving the client's next request,
//     where net/http closes the connection after the answer.
//   - The value of http.ServerContextKey in a request's context is an
//     *http.Server carrying the Server's settings as they were when Serve
//     started (Addr, Handler, the timeouts, MaxHeaderBytes, ErrorLog and
//     the hooks); it does not serve: its Shutdown or Close do nothing to
//     this server.
//   - The ConnState and ConnContext hooks get a net.Conn view of the
//     connection (the one Hijack returns); StateNew and StateClosed are
//     reported from the event loop.
//   - After a 431 the connection is closed once the answer is sent, without
//     net/http's half-close and 500 ms wait.
//   - After Hijack, the ResponseWriter's Flush (and
//     http.ResponseController's) returns http.ErrHijacked; net/http's
//     panics.
//   - A handler must not use its ResponseWriter, or the map of its Header,
//     after ServeHTTP returned (http.ResponseWriter's rule): they are reused
//     for later requests.
//
// # What it needs
//
// What the runtime's callback API needs: io_uring with multishot receives
// (Linux 6.0+) for the fast path; on a runtime that fell back to Go's net
// (uringrt.BackendStd, or BackendAuto without io_uring) the same server
// runs with a goroutine reading each connection.
package uringhttp
