package uringhttp

import (
	"net/http"
	"net/textproto"
	"strings"
	"sync/atomic"
	"time"
)

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
