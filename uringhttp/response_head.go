package uringhttp

import (
	"io"
	"net/http"
	"strconv"
	"strings"
)

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
