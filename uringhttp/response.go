package uringhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"path"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
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

type chunkWriter struct {
	res         *response
	header      http.Header // snapshot of the handler's header at WriteHeader, when it was read before
	wroteHeader bool
	chunking    bool
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

func relevantCaller() runtime.Frame {
	pc := make([]uintptr, 16)
	n := runtime.Callers(1, pc)
	frames := runtime.CallersFrames(pc[:n])
	var frame runtime.Frame
	for {
		frame, more := frames.Next()
		if !strings.HasPrefix(frame.Function, "github.com/uringrt/uringrt/uringhttp.") && !strings.HasPrefix(frame.Function, "net/http.") {
			return frame
		}
		if !more {
			break
		}
	}
	return frame
}

// WriteHeader implements http.ResponseWriter, with net/http's rules: a
// second call is logged and ignored, 1xx codes (but 101) are sent at once
// and may be followed by more, a code outside 100-999 panics.
func (w *response) WriteHeader(code int) {
	if w.hijacked {
		caller := relevantCaller()
		w.h.srv.s.logf("http: response.WriteHeader on hijacked connection from %s (%s:%d)", caller.Function, path.Base(caller.File), caller.Line)
		return
	}
	if w.wroteHeader {
		caller := relevantCaller()
		w.h.srv.s.logf("http: superfluous response.WriteHeader call from %s (%s:%d)", caller.Function, path.Base(caller.File), caller.Line)
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 101 || code > 199 {
		w.disableWriteContinue()
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		var sb strings.Builder
		writeStatusLine(&sb, w.req.ProtoAtLeast(1, 1), code, w.statusBuf[:])
		w.hdr().WriteSubset(&sb, excludedHeadersNoBody)
		sb.WriteString("\r\n")
		w.h.writeOutString(sb.String())
		w.h.flushOut()
		return
	}
	w.checkMaxBytes()
	w.wroteHeader = true
	w.status = code
	if w.calledHeader && w.cw.header == nil {
		w.cw.header = w.snapshot(w.handlerHeader)
	}
	if cl := w.hdr().Get("Content-Length"); cl != "" {
		v, err := strconv.ParseInt(cl, 10, 64)
		if err == nil && v >= 0 {
			w.contentLength = v
		} else {
			w.h.srv.s.logf("http: invalid Content-Length of %q", cl)
			w.handlerHeader.Del("Content-Length")
		}
	}
}

// unsafeString views b as a string for a write that copies it at once.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

var excludedHeadersNoBody = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}

// maxBytesType is the type http.MaxBytesReader returns.
var maxBytesErrType = reflect.TypeOf(&http.MaxBytesError{})

var maxBytesType = reflect.TypeOf(http.MaxBytesReader(nil, http.NoBody, 0))

// checkMaxBytes notices an http.MaxBytesReader that replaced the request's
// Body and hit its limit: net/http's response learns of it through an
// unexported method; this one looks at the reader.
func (w *response) checkMaxBytes() {
	if w.limitHit || w.req.Body == nil || reflect.TypeOf(w.req.Body) != maxBytesType {
		return
	}
	v := reflect.ValueOf(w.req.Body).Elem()
	f := v.FieldByName("err")
	if !f.IsValid() || f.IsNil() || f.Elem().Type() != maxBytesErrType {
		return
	}
	w.requestTooLarge()
}

func (w *response) requestTooLarge() {
	w.limitHit = true
	w.closeAfterReply = true
	if !w.wroteHeader {
		w.Header().Set("Connection", "close")
	}
}

func writeStatusLine(bw io.StringWriter, is11 bool, code int, scratch []byte) {
	if is11 {
		bw.WriteString("HTTP/1.1 ")
	} else {
		bw.WriteString("HTTP/1.0 ")
	}
	if text := http.StatusText(code); text != "" {
		if code >= 100 && code <= 999 {
			scratch[0], scratch[1], scratch[2] = byte('0'+code/100), byte('0'+code/10%10), byte('0'+code%10)
			bw.WriteString(unsafeString(scratch[:3]))
		} else {
			bw.WriteString(strconv.Itoa(code))
		}
		bw.WriteString(" ")
		bw.WriteString(text)
		bw.WriteString("\r\n")
	} else {
		c := strconv.Itoa(code)
		for len(c) < 3 {
			c = "0" + c
		}
		bw.WriteString(c + " status code " + strconv.Itoa(code) + "\r\n")
	}
}

// Write implements http.ResponseWriter.
func (w *response) Write(data []byte) (int, error) { return w.write(len(data), data, "") }

// WriteString implements io.StringWriter.
func (w *response) WriteString(data string) (int, error) { return w.write(len(data), nil, data) }

func (w *response) write(n int, b []byte, s string) (int, error) {
	if w.hijacked {
		if n > 0 {
			caller := relevantCaller()
			w.h.srv.s.logf("http: response.Write on hijacked connection from %s (%s:%d)", caller.Function, path.Base(caller.File), caller.Line)
		}
		return 0, http.ErrHijacked
	}
	if w.canWriteContinue.Load() {
		w.disableWriteContinue()
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if n == 0 {
		return 0, nil
	}
	if !bodyAllowedForStatus(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(n)
	if w.contentLength != -1 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	if w.bw == nil {
		if w.bwKeep == nil {
			w.bwKeep = bufio.NewWriterSize(&w.cw, bufferBeforeChunking)
		}
		w.bw = w.bwKeep
	}
	if b != nil {
		return w.bw.Write(b)
	}
	return w.bw.WriteString(s)
}

func bodyAllowedForStatus(status int) bool {
	switch {
	case status >= 100 && status <= 199:
		return false
	case status == 204, status == 304:
		return false
	}
	return true
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

// Flush implements http.Flusher.
func (w *response) Flush() { w.FlushError() }

// FlushError sends what was written so far (http.ResponseController).
func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	var err error
	if w.bw != nil {
		err = w.bw.Flush()
	}
	if !w.cw.wroteHeader {
		w.cw.writeHeader(nil)
	}
	if e2 := w.h.flushOut(); err == nil {
		err = e2
	}
	return err
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

func (w *response) finalTrailers() http.Header {
	var t http.Header
	for k, vv := range w.handlerHeader {
		if kk, found := strings.CutPrefix(k, http.TrailerPrefix); found {
			if t == nil {
				t = make(http.Header)
			}
			t[kk] = vv
		}
	}
	for _, k := range w.trailers {
		if t == nil {
			t = make(http.Header)
		}
		for _, v := range w.handlerHeader[k] {
			t.Add(k, v)
		}
	}
	return t
}

func (w *response) declareTrailer(k string) {
	k = http.CanonicalHeaderKey(k)
	if !validTrailerHeader(k) {
		return
	}
	w.trailers = append(w.trailers, k)
}

// Write of the chunk writer: the bytes the 2 KiB buffer lets through.
func (cw *chunkWriter) Write(p []byte) (int, error) {
	if !cw.wroteHeader {
		cw.writeHeader(p)
	}
	h := cw.res.h
	if cw.res.req.Method == "HEAD" {
		return len(p), nil
	}
	if cw.chunking {
		var b [18]byte
		x := strconv.AppendInt(b[:0], int64(len(p)), 16)
		x = append(x, '\r', '\n')
		if _, err := h.writeOut(x); err != nil {
			return 0, err
		}
	}
	n, err := h.writeOut(p)
	if cw.chunking && err == nil {
		_, err = h.writeOutString("\r\n")
	}
	return n, err
}

func (cw *chunkWriter) close() {
	if !cw.wroteHeader {
		cw.writeHeader(nil)
	}
	if cw.chunking {
		h := cw.res.h
		h.writeOutString("0\r\n")
		if trailers := cw.res.finalTrailers(); trailers != nil {
			var sb strings.Builder
			trailers.Write(&sb)
			h.writeOutString(sb.String())
		}
		h.writeOutString("\r\n")
	}
}

// writeHeader finalises the response head and writes it; p is the first
// chunk of the body (sniffed for Content-Type, and measured for
// Content-Length when the handler is done).
func (cw *chunkWriter) writeHeader(p []byte) {
	if cw.wroteHeader {
		return
	}
	cw.wroteHeader = true
	w := cw.res
	s := w.h.srv.s
	keepAlives := !s.shuttingDown() && !s.disableKeepAlives.Load()
	isHEAD := w.req.Method == "HEAD"

	header := cw.header
	owned := header != nil
	if !owned {
		header = w.hdr()
	}
	var exclude map[string]bool
	del := func(key string) {
		if owned {
			header.Del(key)
			return
		}
		if _, ok := header[key]; !ok {
			return
		}
		if exclude == nil {
			exclude = make(map[string]bool)
		}
		exclude[key] = true
	}
	var set extraHeader

	trailers := false
	for k := range cw.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			if exclude == nil {
				exclude = make(map[string]bool)
			}
			exclude[k] = true
			trailers = true
		}
	}
	for _, v := range cw.header["Trailer"] {
		trailers = true
		foreachHeaderElement(v, w.declareTrailer)
	}

	te := headerGet(header, "Transfer-Encoding")
	hasTE := te != ""

	if w.handlerDone.Load() && !trailers && !hasTE && bodyAllowedForStatus(w.status) && !headerHas(header, "Content-Length") && (!isHEAD || len(p) > 0) {
		w.contentLength = int64(len(p))
		set.contentLength = strconv.AppendInt(w.clenBuf[:0], int64(len(p)), 10)
	}

	if w.wants10KeepAlive && keepAlives {
		sentLength := headerGet(header, "Content-Length") != ""
		if sentLength && headerGet(header, "Connection") == "keep-alive" {
			w.closeAfterReply = false
		}
	}

	hasCL := w.contentLength != -1

	if w.wants10KeepAlive && (isHEAD || hasCL || !bodyAllowedForStatus(w.status)) {
		if _, set0 := header["Connection"]; !set0 {
			set.connection = "keep-alive"
		}
	} else if !w.req.ProtoAtLeast(1, 1) || w.wantsClose {
		w.closeAfterReply = true
	}

	if headerGet(header, "Connection") == "close" || !keepAlives {
		w.closeAfterReply = true
	}

	if b, ok := w.req.Body.(*body); ok && b.continueReader && !b.readerSawEOF {
		w.closeAfterReply = true
	}

	// Consume what is left of the request body before answering, so that
	// a client that sends all of it before reading the answer does not
	// deadlock; give up past 256 KiB.
	if w.req.ContentLength != 0 && !w.closeAfterReply && !w.fullDuplex {
		var discard, tooBig bool
		switch b := w.req.Body.(type) {
		case *body:
			if !b.continueReader {
				b.h.mu.Lock()
				switch {
				case b.closed:
					if !b.sawEOF {
						w.closeAfterReply = true
					}
				case b.unreadKnown() >= maxPostHandlerReadBytes:
					tooBig = true
				default:
					discard = true
				}
				b.h.mu.Unlock()
			}
		default:
			discard = true
		}
		if discard {
			var err error
			if b, ok := w.reqBody.(*body); ok {
				_, err = b.drain(maxPostHandlerReadBytes + 1) // also once the handler returned
			} else {
				_, err = io.CopyN(io.Discard, w.reqBody, maxPostHandlerReadBytes+1)
			}
			switch err {
			case nil:
				tooBig = true
			case http.ErrBodyReadAfterClose:
			case io.EOF:
				if err := w.reqBody.Close(); err != nil {
					w.closeAfterReply = true
				}
			default:
				w.closeAfterReply = true
			}
		}
		if tooBig {
			w.requestTooLarge()
			del("Connection")
			set.connection = "close"
		}
	}

	code := w.status
	if bodyAllowedForStatus(code) {
		_, haveType := header["Content-Type"]
		ce := headerGet(header, "Content-Encoding")
		if ce == "" && !haveType && !hasTE && len(p) > 0 {
			set.contentType = http.DetectContentType(p)
		}
	} else {
		for _, k := range suppressedHeaders(code) {
			del(k)
		}
	}

	if !headerHas(header, "Date") {
		set.date = appendDate(w.dateBuf[:0])
	}

	if hasCL && hasTE && te != "identity" {
		s.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", te, w.contentLength)
		del("Content-Length")
		hasCL = false
	}

	if w.req.Method == "HEAD" || !bodyAllowedForStatus(code) || code == http.StatusNoContent {
		del("Transfer-Encoding")
	} else if hasCL {
		del("Transfer-Encoding")
	} else if w.req.ProtoAtLeast(1, 1) {
		if hasTE && te == "identity" {
			cw.chunking = false
			w.closeAfterReply = true
			del("Transfer-Encoding")
		} else {
			cw.chunking = true
			set.transferEncoding = "chunked"
			if hasTE && te == "chunked" {
				del("Transfer-Encoding")
			}
		}
	} else {
		w.closeAfterReply = true
		del("Transfer-Encoding")
	}

	if cw.chunking {
		del("Content-Length")
	}
	if !w.req.ProtoAtLeast(1, 0) {
		return
	}

	delConn := w.closeAfterReply &&
		(!keepAlives || !hasToken(headerGet(cw.header, "Connection"), "close")) &&
		!(w.status == http.StatusSwitchingProtocols && headerGet(header, "Upgrade") != "" && headerValuesContainsToken(header["Connection"], "Upgrade"))
	if delConn {
		del("Connection")
		if w.req.ProtoAtLeast(1, 1) {
			set.connection = "close"
		}
	}

	h := w.h
	if h.out == nil {
		h.out = h.takeOut()
	}
	ob := outWriter{h}
	writeStatusLine(ob, w.req.ProtoAtLeast(1, 1), code, w.statusBuf[:])
	if len(cw.header) > 0 {
		writeHeaderSorted(ob, cw.header, exclude)
	}
	set.write(ob)
	ob.WriteString("\r\n")
}

const maxPostHandlerReadBytes = 256 << 10

// writeHeaderSorted writes h but the keys in exclude as Header.WriteSubset
// does (keys sorted, invalid names dropped, CR and LF in values turned to
// spaces, values trimmed), without its pooled sorter for a small header.
func writeHeaderSorted(ob outWriter, h http.Header, exclude map[string]bool) {
	if len(h) > 16 {
		h.WriteSubset(ob, exclude)
		return
	}
	var arr [16]string
	keys := arr[:0]
	for k := range h {
		if exclude[k] {
			continue
		}
		// insertion sort: a head has a few keys
		i := len(keys)
		keys = append(keys, k)
		for i > 0 && keys[i-1] > k {
			keys[i] = keys[i-1]
			i--
		}
		keys[i] = k
	}
	for _, k := range keys {
		if !validHeaderFieldName(k) {
			continue
		}
		for _, v := range h[k] {
			if needsHeaderValueFix(v) {
				v = textproto.TrimString(headerNewlineToSpace.Replace(v))
			}
			ob.WriteString(k)
			ob.WriteString(": ")
			ob.WriteString(v)
			ob.WriteString("\r\n")
		}
	}
}

var headerNewlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")

// needsHeaderValueFix reports whether v holds CR or LF or starts or ends
// with ASCII space.
func needsHeaderValueFix(v string) bool {
	if n := len(v); n > 0 && (isASCIISpace(v[0]) || isASCIISpace(v[n-1])) {
		return true
	}
	return strings.ContainsAny(v, "\r\n")
}

func isASCIISpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// outWriter writes to the connection's output.
type outWriter struct{ h *hconn }

func (o outWriter) Write(p []byte) (int, error)       { return o.h.writeOut(p) }
func (o outWriter) WriteString(s string) (int, error) { return o.h.writeOutString(s) }

func headerGet(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func headerHas(h http.Header, k string) bool { _, ok := h[k]; return ok }

func suppressedHeaders(status int) []string {
	switch {
	case status == 304:
		return []string{"Content-Type", "Content-Length", "Transfer-Encoding"}
	case !bodyAllowedForStatus(status):
		return []string{"Content-Length", "Transfer-Encoding"}
	}
	return nil
}

func foreachHeaderElement(v string, fn func(string)) {
	v = textproto.TrimString(v)
	if v == "" {
		return
	}
	if !strings.Contains(v, ",") {
		fn(v)
		return
	}
	for _, f := range strings.Split(v, ",") {
		if f = textproto.TrimString(f); f != "" {
			fn(f)
		}
	}
}

// extraHeader holds the headers the server adds, written after the
// handler's in net/http's order.
type extraHeader struct {
	contentType      string
	connection       string
	transferEncoding string
	date             []byte
	contentLength    []byte
}

func (e *extraHeader) write(w outWriter) {
	if e.date != nil {
		w.WriteString("Date: ")
		w.Write(e.date)
		w.WriteString("\r\n")
	}
	if e.contentLength != nil {
		w.WriteString("Content-Length: ")
		w.Write(e.contentLength)
		w.WriteString("\r\n")
	}
	if e.contentType != "" {
		w.WriteString("Content-Type: " + e.contentType + "\r\n")
	}
	if e.connection != "" {
		w.WriteString("Connection: " + e.connection + "\r\n")
	}
	if e.transferEncoding != "" {
		w.WriteString("Transfer-Encoding: " + e.transferEncoding + "\r\n")
	}
}

// dateCache holds the formatted Date of the current second.
type dateCache struct {
	sec int64
	b   []byte
}

var curDate atomic.Pointer[dateCache]

func appendDate(dst []byte) []byte {
	now := time.Now()
	sec := now.Unix()
	if d := curDate.Load(); d != nil && d.sec == sec {
		return append(dst, d.b...)
	}
	d := &dateCache{sec: sec, b: now.UTC().AppendFormat(nil, http.TimeFormat)}
	curDate.Store(d)
	return append(dst, d.b...)
}

var errWriteTimeout = &net.OpError{Op: "write", Net: "tcp", Err: timeoutError{}}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
func (timeoutError) Unwrap() error   { return os.ErrDeadlineExceeded }
