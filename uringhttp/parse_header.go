package uringhttp

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
)

// parseHeader parses header lines up to the blank line, as net/textproto's
// ReadMIMEHeader does; spaced reports a name with a space in it, the one
// invalid name textproto keeps (the server refuses it).
func parseHeader(s string) (h http.Header, spaced bool, err error) {
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
	h = make(http.Header, n)
	if s != "" && (s[0] == ' ' || s[0] == '\t') {
		l, _ := nextLine(s)
		if len(l) > 80 {
			return nil, false, protoError("message too large")
		}
		return nil, false, textproto.ProtocolError(fmt.Sprintf("malformed MIME header initial line: %q", l))
	}
	if n == 0 {
		return h, spaced, nil
	}
	strs := make([]string, n)
	var kb [64]byte
	for {
		var kv string
		kv, s = nextLine(s)
		if kv == "" {
			return h, spaced, nil
		}
		if strings.IndexByte(kv, ':') < 0 {
			return nil, false, textproto.ProtocolError(fmt.Sprintf("malformed MIME header: missing colon: %q", kv))
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
		spaced = spaced || ok && strings.IndexByte(key, ' ') >= 0
		if !ok {
			return nil, false, textproto.ProtocolError(fmt.Sprintf("malformed MIME header line: %q", kv))
		}
		for i := 0; i < len(v); i++ {
			if !validHeaderValueByte(v[i]) {
				return nil, false, textproto.ProtocolError(fmt.Sprintf("malformed MIME header line: %q", kv))
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
