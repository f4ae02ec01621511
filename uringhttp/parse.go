package uringhttp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
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

// hasToken reports whether token (lower case) occurs in v, ASCII
// case-insensitively, between the start or end of v, spaces, tabs and
// commas: the rule net/http applies to one header value for Expect's
// 100-continue and Connection's close and keep-alive, looser than a
// comma-separated list's ("x 100-continue" holds it).
func hasToken(v, token string) bool {
	n := len(token)
	if n == 0 {
		return false
	}
	for i := 0; i+n <= len(v); i++ {
		if i > 0 && !isTokenBoundary(v[i-1]) || i+n < len(v) && !isTokenBoundary(v[i+n]) {
			continue
		}
		if tokenEqual(v[i:i+n], token) {
			return true
		}
	}
	return false
}

func isTokenBoundary(c byte) bool { return c == ' ' || c == ',' || c == '\t' }

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

	h, spaced, err := parseHeader(rest)
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
	// parseHeader took every value byte by byte with the same classes as
	// validHeaderFieldValue and every name but one with a space (kept, as
	// textproto keeps it) as validHeaderFieldName would, so the server's
	// look over the whole map (a map iteration a request) finds something
	// only when a name has a space.
	if spaced {
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
	}
	delete(h, "Host")
	// The response's rules read the first Connection value with
	// hasToken, as net/http's do.
	conn0 := ""
	if len(conn) > 0 {
		conn0 = conn[0]
	}
	p.wantsCls = req.Close || hasToken(conn0, "close")
	p.want10KA = major == 1 && minor == 0 && hasToken(conn0, "keep-alive")
	if ex, ok := h["Expect"]; ok && len(ex) > 0 {
		p.expect = ex[0]
	}
	if isH2Upgrade {
		p.hasBody = false
	}
	return nil
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
