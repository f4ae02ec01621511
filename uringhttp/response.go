package uringhttp

import (
	"bufio"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// bufferBeforeChunking is how much a handler may write before the response
// head goes out: a response complete within it gets a Content-Length, a
// longer one chunked encoding (net/http's threshold, so that both send the
// same bytes).
const bufferBeforeChunking = 2048

// response is the http.ResponseWriter. It follows net/http's response
// writer step by step: a 2 KiB buffer in front of a chunk writer that
// finalises the head (Content-Length or chunked, Content-Type sniffing,
// Date, Connection) when the first bytes or the handler's end reach it.
type response struct {
	p    parsed // the request head
	h    *hconn
	req  *http.Request
	body *body // nil without a body

	reqBody       io.ReadCloser
	handlerHeader http.Header
	cw            chunkWriter
	bw            *bufio.Writer

	wroteHeader      bool
	calledHeader     bool
	status           int
	contentLength    int64
	written          int64
	closeAfterReply  bool
	fullDuplex       bool
	hijacked         bool
	limitHit         bool
	wants10KeepAlive bool
	wantsClose       bool
	trailers         []string
	handlerDone      atomic.Bool
	canWriteContinue atomic.Bool
	continueMu       sync.Mutex

	// kept across the response's reuses (release)
	onLoop   func() // runOnLoop, made once
	spareHdr [2]http.Header
	bwKeep   *bufio.Writer
	obuf     []byte

	dateBuf   [len(http.TimeFormat)]byte
	clenBuf   [10]byte
	statusBuf [3]byte
}

// Responses are pooled: a handler must not use its ResponseWriter after
// ServeHTTP returned (http.ResponseWriter's rule).
var respPool = sync.Pool{New: func() any { return new(response) }}

func getResponse() *response { return respPool.Get().(*response) }

// release puts w back in the pool with what it keeps across requests:
// its header maps (cleared), its 2 KiB writer and its output buffer, so a
// request costs one pool operation. A handler must not keep w.Header()
// past ServeHTTP.
func (w *response) release() {
	hh, sh, bw, ob, ol := w.handlerHeader, w.cw.header, w.bwKeep, w.obuf, w.onLoop
	if hh == nil {
		hh = w.spareHdr[0]
	}
	if sh == nil {
		sh = w.spareHdr[1]
	}
	*w = response{}
	if hh != nil && len(hh) <= 32 {
		clear(hh)
		w.spareHdr[0] = hh
	}
	if sh != nil && len(sh) <= 32 {
		clear(sh)
		w.spareHdr[1] = sh
	}
	if bw != nil {
		bw.Reset(&w.cw) // drop what a panicking handler left
	}
	w.bwKeep, w.obuf, w.onLoop = bw, ob, ol
	respPool.Put(w)
}

// getHeader returns an empty header map, a kept one when there is one.
func (w *response) getHeader(i int) http.Header {
	if h := w.spareHdr[i]; h != nil {
		w.spareHdr[i] = nil
		return h
	}
	return make(http.Header, 4)
}

// snapshot copies the handler's header as it is at WriteHeader: the map
// and its value slices, not the strings' bytes (a later Set or Add makes
// a new slice or appends past the copied length, so the head sent is the
// one WriteHeader saw; only a value overwritten in place would show).
func (w *response) snapshot(src http.Header) http.Header {
	dst := w.getHeader(1)
	for k, v := range src {
		dst[k] = v[:len(v):len(v)]
	}
	return dst
}

// init readies w for the parsed request w.p.
func (w *response) init(h *hconn) {
	p := &w.p
	w.h, w.req = h, p.req
	w.contentLength = -1
	w.wants10KeepAlive, w.wantsClose = p.want10KA, p.wantsCls
	w.cw.res = w
}

// Header implements http.ResponseWriter.
func (w *response) Header() http.Header {
	if w.handlerHeader == nil {
		w.handlerHeader = w.getHeader(0)
	}
	if w.cw.header == nil && w.wroteHeader && !w.cw.wroteHeader {
		w.cw.header = w.snapshot(w.handlerHeader)
	}
	w.calledHeader = true
	return w.handlerHeader
}

func (w *response) hdr() http.Header {
	if w.handlerHeader == nil {
		w.handlerHeader = w.getHeader(0)
	}
	return w.handlerHeader
}

func (w *response) disableWriteContinue() {
	if !w.canWriteContinue.Load() {
		return // never set, or cleared by writeContinue after its send
	}
	w.continueMu.Lock()
	w.canWriteContinue.Store(false)
	w.continueMu.Unlock()
}

// writeContinue sends 100 Continue before the first body read.
func (w *response) writeContinue() {
	if !w.canWriteContinue.Load() {
		return
	}
	w.continueMu.Lock()
	if w.canWriteContinue.Load() {
		w.h.send([]byte("HTTP/1.1 100 Continue\r\n\r\n"))
		w.canWriteContinue.Store(false)
	}
	w.continueMu.Unlock()
}

// SetReadDeadline sets the deadline for reading the request body
// (http.ResponseController); the zero time clears it.
func (w *response) SetReadDeadline(t time.Time) error {
	return w.h.setDeadline(t, false)
}

// SetWriteDeadline sets the deadline for writing the response
// (http.ResponseController); the zero time clears it.
func (w *response) SetWriteDeadline(t time.Time) error {
	return w.h.setDeadline(t, true)
}

// EnableFullDuplex lets the handler read the request body while writing
// the response (http.ResponseController).
func (w *response) EnableFullDuplex() error {
	w.fullDuplex = true
	return nil
}

// CloseNotify implements the deprecated http.CloseNotifier: the channel
// receives once when the client goes away.
func (w *response) CloseNotify() <-chan bool {
	ch := make(chan bool, 1)
	ctx := w.req.Context()
	go func() {
		<-ctx.Done()
		ch <- true
	}()
	return ch
}

// finishRequest completes the response after the handler returned.
func (w *response) finishRequest() {
	w.handlerDone.Store(true)
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.bw != nil {
		w.bw.Flush()
		w.bw = nil
	}
	w.cw.close()
	w.checkMaxBytes()
	w.h.flushOut() // the answer goes out before the rest of the body is read
	if w.reqBody != nil {
		w.reqBody.Close()
	}
	if w.req.MultipartForm != nil {
		w.req.MultipartForm.RemoveAll()
	}
}

func (w *response) shouldReuseConnection() bool {
	if w.closeAfterReply {
		return false
	}
	if w.req.Method != "HEAD" && w.contentLength != -1 && bodyAllowedForStatus(w.status) && w.contentLength != w.written {
		return false
	}
	if w.h.werr != nil {
		return false
	}
	if w.body != nil && w.body.earlyClose {
		return false
	}
	return true
}
