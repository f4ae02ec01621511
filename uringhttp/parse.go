package uringhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// The request head parser. It reads the request line and the header fields
// of one request out of a byte slice, with the rules of net/http's
// ReadRequest (a line ends in CRLF or a bare LF, folded lines are joined
// with a space, the same byte classes for names and values) and its
// server's checks after it (Host, versions, Transfer-Encoding,
// Content-Length), so that the same bytes get the same answer.

// emptyRequest is the template of every request (never modified).
var emptyRequest = &http.Request{}

// errIncomplete: the head's end is not in the bytes yet.
var errIncomplete = errors.New("uringhttp: incomplete request head")

// errTooLarge: the head passed MaxHeaderBytes (431).
var errTooLarge = errors.New("uringhttp: request head too large")

// statusError is an error answered with its code and text, as net/http's
// server answers a badRequestError or an unsupported version.
type statusError struct {
	code int
	text string
}

func (e statusError) Error() string { return http.StatusText(e.code) + ": " + e.text }

// unsupportedTEError is answered with 501.
type unsupportedTEError struct{ err string }

func (e *unsupportedTEError) Error() string { return e.err }

// protoError is a malformed request answered with a bare 400.
type protoError string

func (e protoError) Error() string { return string(e) }

// headEnd returns the length of the request head at the start of b (up to
// and including the blank line that ends it), or -1 when it is not all
// there. Lines end in LF, optionally preceded by CR.
func headEnd(b []byte) int {
	i := 0
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		line := b[i : i+j]
		i += j + 1
		if i-j-1 > 0 && (len(line) == 0 || len(line) == 1 && line[0] == '\r') {
			return i // a blank line after the request line
		}
	}
}

// parsed is a request head taken apart.
type parsed struct {
	req      *http.Request
	chunked  bool
	clen     int64 // body length; -1 chunked
	hasBody  bool
	expect   string
	wantsCls bool // Connection: close (or HTTP/1.0 without keep-alive)
	want10KA bool
	rctx     *reqContext // the request's context
}

// hasToken reports whether the comma-separated list v holds token,
// ASCII case-insensitively.
func hasToken(v, token string) bool {
	if v == "" {
		return false
	}
	return headerValuesContainsToken([]string{v}, token)
}

// trimLine drops the line end (LF or CRLF) of a line returned with it.
func trimLine(l []byte) []byte {
	if n := len(l); n > 0 && l[n-1] == '\n' {
		l = l[:n-1]
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
	}
	return l
}

// nextLine returns the next line of s (without its end) and the rest.
func nextLine(s string) (line, rest string) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, ""
	}
	line, rest = s[:i], s[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// parseHead parses the head s (as delimited by headEnd, so it ends with a
// blank line) into a request. The strings of the request share s's memory.
func parseHead(ctx context.Context, s string, p *parsed, ustore *url.URL) error {
	line, rest := nextLine(s)
	method, rest1, ok1 := strings.Cut(line, " ")
	uri, proto, ok2 := strings.Cut(rest1, " ")
	if !ok1 || !ok2 {
		return protoError("malformed HTTP request")
	}
	if !validMethod(method) {
		return protoError("invalid method")
	}
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok {
		return protoError("malformed HTTP version")
	}
	// WithContext is the only way to give a Request its context; from a
	// shared empty template it costs the one Request allocation.
	req := emptyRequest.WithContext(ctx)
	req.Method, req.RequestURI, req.Proto = internMethod(method), uri, internProto(proto)
	req.ProtoMajor, req.ProtoMinor = major, minor
	p.req = req
	rawurl := uri
	justAuthority := req.Method == "CONNECT" && !strings.HasPrefix(rawurl, "/")
	if justAuthority {
		rawurl = "http://" + rawurl
	}
	u, err := parseRequestURI(rawurl, ustore)
	if err != nil {
		return err
	}
	if justAuthority {
		u.Scheme = ""
	}
	req.URL = u

	h, err := parseHeader(rest)
	if err != nil {
		return err
	}
	req.Header = h
	hosts := h["Host"]
	if len(hosts) > 1 {
		return protoError("too many Host headers")
	}
	req.Host = u.Host
	if req.Host == "" && len(hosts) > 0 {
		req.Host = hosts[0]
	}
	// Pragma: no-cache without Cache-Control means Cache-Control: no-cache.
	if pr, ok := h["Pragma"]; ok && len(pr) > 0 && pr[0] == "no-cache" {
		if _, ok := h["Cache-Control"]; !ok {
			h["Cache-Control"] = []string{"no-cache"}
		}
	}
	conn := h["Connection"]
	hasClose := headerValuesContainsToken(conn, "close")
	if major == 1 && minor == 0 {
		req.Close = hasClose || !headerValuesContainsToken(conn, "keep-alive")
	} else {
		req.Close = major < 1 || hasClose
	}
	if err := p.transfer(); err != nil {
		return err
	}
	isH2Upgrade := req.Method == "PRI" && len(h) == 0 && u.Path == "*" && req.Proto == "HTTP/2.0"
	if isH2Upgrade {
		req.ContentLength = -1
		req.Close = true
	}

	// The server's checks after ReadRequest.
	if !(major == 1 || major == 2 && minor == 0 && req.Method == "PRI" && uri == "*") {
		return statusError{http.StatusHTTPVersionNotSupported, "unsupported protocol version"}
	}
	if req.ProtoAtLeast(1, 1) && len(hosts) == 0 && !isH2Upgrade && req.Method != "CONNECT" {
		return statusError{http.StatusBadRequest, "missing required Host header"}
	}
	if len(hosts) == 1 && !validHostHeader(hosts[0]) {
		return statusError{http.StatusBadRequest, "malformed Host header"}
	}
	for k, vv := range h {
		if !validHeaderFieldName(k) {
			return statusError{http.StatusBadRequest, "invalid header name"}
		}
		for _, v := range vv {
			if !validHeaderFieldValue(v) {
				return statusError{http.StatusBadRequest, "invalid header value"}
			}
		}
	}
	delete(h, "Host")
	p.wantsCls = req.Close || headerValuesContainsToken(conn, "close")
	p.want10KA = major == 1 && minor == 0 && headerValuesContainsToken(conn, "keep-alive")
	if ex, ok := h["Expect"]; ok && len(ex) > 0 {
		p.expect = ex[0]
	}
	if isH2Upgrade {
		p.hasBody = false
	}
	return nil
}

// transfer applies the Transfer-Encoding and Content-Length rules.
func (p *parsed) transfer() error {
	req, h := p.req, p.req.Header
	if raw, present := h["Transfer-Encoding"]; present {
		delete(h, "Transfer-Encoding")
		if req.ProtoAtLeast(1, 1) {
			if len(raw) != 1 {
				return &unsupportedTEError{fmt.Sprintf("too many transfer encodings: %q", raw)}
			}
			if !strings.EqualFold(raw[0], "chunked") {
				return &unsupportedTEError{fmt.Sprintf("unsupported transfer encoding: %q", raw[0])}
			}
			p.chunked = true
		}
	}
	cls := h["Content-Length"]
	if len(cls) > 1 {
		first := textproto.TrimString(cls[0])
		for _, ct := range cls[1:] {
			if first != textproto.TrimString(ct) {
				return protoError("http: message cannot contain multiple Content-Length headers")
			}
		}
		h["Content-Length"] = []string{first}
		cls = h["Content-Length"]
	}
	var n int64
	if len(cls) > 0 {
		cl := textproto.TrimString(cls[0])
		if cl == "" {
			return protoError("invalid empty Content-Length")
		}
		v, err := strconv.ParseUint(cl, 10, 63)
		if err != nil {
			return protoError("bad Content-Length")
		}
		n = int64(v)
	}
	switch {
	case p.chunked:
		delete(h, "Content-Length")
		p.clen, p.hasBody = -1, true
		req.ContentLength = -1
		req.TransferEncoding = []string{"chunked"}
	case len(cls) > 0:
		p.clen, p.hasBody = n, n > 0
		req.ContentLength = n
	default:
		delete(h, "Content-Length")
		p.clen = 0
	}
	// Trailer
	if vv, ok := h["Trailer"]; ok && p.chunked {
		delete(h, "Trailer")
		var tr http.Header
		for _, v := range vv {
			for _, f := range strings.Split(v, ",") {
				f = textproto.TrimString(f)
				if f == "" {
					continue
				}
				k := http.CanonicalHeaderKey(f)
				switch k {
				case "Transfer-Encoding", "Trailer", "Content-Length":
					return protoError("bad trailer key")
				}
				if tr == nil {
					tr = make(http.Header)
				}
				tr[k] = nil
			}
		}
		req.Trailer = tr
	}
	return nil
}

// parseHeader parses header lines up to the blank line, as net/textproto's
// ReadMIMEHeader does.
func parseHeader(s string) (http.Header, error) {
	n := 0
	for rest := s; ; {
		var l string
		l, rest = nextLine(rest)
		if l == "" {
			break
		}
		if l[0] != ' ' && l[0] != '\t' {
			n++
		}
	}
	h := make(http.Header, n)
	if s != "" && (s[0] == ' ' || s[0] == '\t') {
		l, _ := nextLine(s)
		if len(l) > 80 {
			return nil, protoError("message too large")
		}
		return nil, textproto.ProtocolError(fmt.Sprintf("malformed MIME header initial line: %q", l))
	}
	if n == 0 {
		return h, nil
	}
	strs := make([]string, n)
	var kb [64]byte
	for {
		var kv string
		kv, s = nextLine(s)
		if kv == "" {
			return h, nil
		}
		if strings.IndexByte(kv, ':') < 0 {
			return nil, textproto.ProtocolError(fmt.Sprintf("malformed MIME header: missing colon: %q", kv))
		}
		kv = trimOWS(kv)
		// Continuation lines (obs-fold) are joined with one space.
		if len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
			buf := []byte(kv)
			for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
				s = strings.TrimLeft(s, " \t")
				buf = append(buf, ' ')
				var l string
				l, s = nextLine(s)
				buf = append(buf, trimOWS(l)...)
			}
			kv = string(buf)
		}
		k, v, _ := strings.Cut(kv, ":")
		key, ok := canonicalKey(k, kb[:0])
		if !ok {
			return nil, textproto.ProtocolError(fmt.Sprintf("malformed MIME header line: %q", kv))
		}
		for i := 0; i < len(v); i++ {
			if !validHeaderValueByte(v[i]) {
				return nil, textproto.ProtocolError(fmt.Sprintf("malformed MIME header line: %q", kv))
			}
		}
		value := strings.TrimLeft(v, " \t")
		if vv := h[key]; vv == nil && len(strs) > 0 {
			vv, strs = strs[:1:1], strs[1:]
			vv[0] = value
			h[key] = vv
		} else {
			h[key] = append(vv, value)
		}
	}
}

func trimOWS(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	s = s[i:]
	j := len(s)
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	return s[:j]
}

// canonicalKey canonicalises a header key as textproto does: keys with a
// space are kept as they are (and refused later by the server's check),
// other invalid bytes fail. Common keys come without allocation.
func canonicalKey(k string, buf []byte) (string, bool) {
	if k == "" {
		return "", false
	}
	upper, canon := true, true
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !validHeaderFieldByte(c) {
			if c == ' ' {
				return k, validKeyWithSpace(k)
			}
			return "", false
		}
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			canon = false
		}
		upper = c == '-'
	}
	if canon {
		if ck, ok := commonKeys[k]; ok {
			return ck, true
		}
		return k, true
	}
	buf = append(buf, k...)
	upper = true
	for i, c := range buf {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
		upper = c == '-'
	}
	if ck, ok := commonKeys[string(buf)]; ok {
		return ck, true
	}
	return string(buf), true
}

func validKeyWithSpace(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c != ' ' && !validHeaderFieldByte(c) {
			return false
		}
	}
	return true
}

var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"Accept", "Accept-Charset", "Accept-Encoding", "Accept-Language", "Accept-Ranges",
		"Authorization", "Cache-Control", "Cc", "Connection", "Content-Id", "Content-Language", "Content-Length",
		"Content-Transfer-Encoding", "Content-Type", "Cookie", "Date", "Dkim-Signature", "Etag", "Expect", "Expires",
		"From", "Host", "If-Modified-Since", "If-None-Match", "In-Reply-To", "Last-Modified", "Location",
		"Message-Id", "Mime-Version", "Origin", "Pragma", "Received", "Referer", "Return-Path", "Server",
		"Set-Cookie", "Subject", "To", "Transfer-Encoding", "Trailer", "Upgrade", "User-Agent", "Via",
		"X-Forwarded-For", "X-Imforwards", "X-Powered-By", "Sec-Websocket-Key", "Sec-Websocket-Version",
		"Sec-Websocket-Extensions", "Sec-Websocket-Protocol", "Keep-Alive", "Te", "Upgrade-Insecure-Requests",
		"Sec-Fetch-Mode", "Sec-Fetch-Site", "Sec-Fetch-Dest", "Dnt", "Range", "If-Match", "X-Requested-With",
		"X-Real-Ip", "Forwarded", "Content-Encoding"} {
		m[k] = k
	}
	return m
}()

// validHeaderFieldByte reports whether c is a token byte (RFC 9110).
func validHeaderFieldByte(c byte) bool {
	return c < 0x80 && tokenTable[c]
}

var tokenTable = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return
}()

// validHeaderValueByte: VCHAR, SP, HTAB, and obs-text (>= 0x80).
func validHeaderValueByte(c byte) bool {
	return c >= 0x80 || c == '\t' || 0x20 <= c && c < 0x7f
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		if !validHeaderFieldByte(m[i]) {
			return false
		}
	}
	return true
}

func internMethod(m string) string {
	switch m {
	case "GET":
		return "GET"
	case "POST":
		return "POST"
	case "HEAD":
		return "HEAD"
	case "PUT":
		return "PUT"
	case "DELETE":
		return "DELETE"
	case "OPTIONS":
		return "OPTIONS"
	case "PATCH":
		return "PATCH"
	}
	return m
}

func internProto(p string) string {
	switch p {
	case "HTTP/1.1":
		return "HTTP/1.1"
	case "HTTP/1.0":
		return "HTTP/1.0"
	}
	return p
}

// parseRequestURI is url.ParseRequestURI with a fast path for the common
// plain path ("/", "/a/b") that gives the same URL, stored in u.
func parseRequestURI(raw string, u *url.URL) (*url.URL, error) {
	if len(raw) > 0 && raw[0] == '/' && (len(raw) == 1 || raw[1] != '/') {
		plain := true
		for i := 0; i < len(raw); i++ {
			if c := raw[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
				plain = false
				break
			}
		}
		if plain {
			*u = url.URL{Path: raw}
			return u, nil
		}
	}
	return url.ParseRequestURI(raw)
}
