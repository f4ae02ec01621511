// Package uringhttp serves HTTP/1.1 to any http.Handler on the callback API
// of a uringrt runtime: requests are read and parsed on the runtime's event
// loops, handlers run on goroutines, responses leave through each
// connection's output queue in batches (or, with GOMAXPROCS > 1, straight
// from the handler's goroutine when the connection's loop is parked and
// has nothing of it queued: uringrt's AsyncWrite).
//
//	rt, _ := uringrt.New(uringrt.Config{})
//	ln, _ := rt.Listen("tcp", ":8080")
//	srv := &uringhttp.Server{Handler: mux, Runtime: rt}
//	go srv.Serve(ln)
//	...
//	srv.Shutdown(ctx)
//
// # What it costs
//
// An idle keep-alive connection holds one small struct: no goroutine, no
// read or write buffer. Bytes that arrive while a request is served, and
// a response being written, use pooled buffers that go back when the
// connection is idle again. A request allocates what net/http's does for
// its http.Request, its Header and its context, and little else: the head
// is copied once into a string that the method, URL, header values and
// Host share.
//
// # How handlers are run, and why
//
// Each request head is parsed on the loop and queued for the goroutines the
// server keeps. A goroutine takes the queued requests one after another
// (for each, also the requests the client pipelined behind it, in order)
// and parks when none is left; one parked for 2 s ends. Whenever requests
// wait, at least one goroutine is free to take them: one that takes a
// request while others wait and no other is free wakes another first (or
// starts one). A handler that blocks (a database call, a sleep) thus holds
// only its own goroutine: other connections are read and answered
// meanwhile; and the requests of a batch the loop read together run one
// after another on one warm goroutine, without a goroutine switch per
// request. The runtime's fixed worker pool hashed by
// connection was not chosen because a worker blocked by one handler stalls
// every connection hashed to it. A goroutine started per request was
// measured: its stack, grown by copying on each new goroutine, took 21 % of
// the CPU of a 13-byte answer under wrk; a kept goroutine has its stack
// grown already.
//
// # Flow control
//
// Request.Body streams: the handler reads bytes as they arrive, and the
// connection stops being read while 64 KiB wait unread, so an upload of any
// size holds that much memory at most. A response that a client reads more
// slowly than the handler writes blocks the handler's Write while the
// connection's output queue is full (uringrt.Config.MaxWriteBuffer).
//
// # What differs from net/http
//
//   - TLS and HTTP/2 are not served here: serve them with net/http on a
//     uringrt.Listen listener (the net.Conn path), where it runs unchanged.
//   - Timeouts are applied by one sweep per server every quarter of the
//     shortest timeout (5 ms to 1 s) on a clock the sweep keeps, so no
//     timer is armed per request: a timeout of d fires between d and about
//     1.5 x d. Past ReadTimeout, a body read that has to wait for bytes
//     fails; bytes that had arrived before are still read (net/http fails
//     a read of arrived bytes too when its connection's buffer had not
//     taken them in).
//     WriteTimeout bounds the handler's writes, not the sending of what
//     they queued: output queued before it passed (up to
//     uringrt.Config.MaxWriteBuffer, 4 MiB by default) still goes to a
//     client that reads slowly, where net/http's deadline, on the socket,
//     cuts the response at what the kernel had taken.
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
