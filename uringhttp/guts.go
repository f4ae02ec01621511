package uringhttp

import (
	"net/http"
	"strings"
)

// Lexical checks of HTTP/1.1 (RFC 9110), with the verdicts net/http's
// server gives: which header names, values and Host values it accepts,
// and comma-separated token lists.

func validHeaderFieldName(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !validHeaderFieldByte(v[i]) {
			return false
		}
	}
	return true
}

// validHeaderFieldValue refuses control bytes but HTAB (obs-text passes).
func validHeaderFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' || b == 0x7f) && b != ' ' && b != '\t' {
			return false
		}
	}
	return true
}

// validHostHeader accepts the bytes of a host, an IP literal and a port,
// leniently (any order).
func validHostHeader(h string) bool {
	for i := 0; i < len(h); i++ {
		if !hostByte[h[i]] {
			return false
		}
	}
	return true
}

var hostByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!$%&()*+,-.:;=['/]_~" {
		if c != '/' {
			t[c] = true
		}
	}
	return
}()

// headerValuesContainsToken reports whether any of the comma-separated
// lists holds token (ASCII case-insensitive, optional whitespace around).
func headerValuesContainsToken(values []string, token string) bool {
	for _, v := range values {
		for {
			el, rest, more := strings.Cut(v, ",")
			if tokenEqual(trimOWS(el), token) {
				return true
			}
			if !more {
				break
			}
			v = rest
		}
	}
	return false
}

func tokenEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 0x80 {
			return false
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// validTrailerHeader refuses the fields a trailer must not carry.
func validTrailerHeader(name string) bool {
	name = http.CanonicalHeaderKey(name)
	if strings.HasPrefix(name, "If-") {
		return false
	}
	switch name {
	case "Authorization", "Cache-Control", "Connection", "Content-Encoding", "Content-Length",
		"Content-Range", "Content-Type", "Expect", "Host", "Keep-Alive", "Max-Forwards", "Pragma",
		"Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection", "Range", "Realm", "Te",
		"Trailer", "Transfer-Encoding", "Www-Authenticate":
		return false
	}
	return true
}
