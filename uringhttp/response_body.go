package uringhttp

import (
	"bufio"
	"net/http"
	"path"
	"strconv"
	"strings"
)

type chunkWriter struct {
	res         *response
	header      http.Header // snapshot of the handler's header at WriteHeader, when it was read before
	wroteHeader bool
	chunking    bool
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
