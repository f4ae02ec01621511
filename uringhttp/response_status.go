package uringhttp

import (
	"io"
	"net/http"
	"path"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"unsafe"
)

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
