package uringws

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"
)

// DefaultMaxMessageSize is the message size limit when
// Upgrader.MaxMessageSize is 0: 4 MiB.
const DefaultMaxMessageSize = 4 << 20

// DefaultWriteBufferLimit is the output bound when
// Upgrader.WriteBufferLimit is 0: 1 MiB.
const DefaultWriteBufferLimit = 1 << 20

// Upgrader upgrades HTTP requests to WebSocket connections (RFC 6455).
// Its fields are read at each Upgrade; do not change them while it is in
// use. The zero value is usable.
type Upgrader struct {
	// CheckOrigin reports whether to accept a request's Origin; a refusal
	// answers 403. nil accepts a request without an Origin header and one
	// whose Origin's host is the request's Host (ASCII case-insensitive),
	// as gorilla/websocket's default.
	CheckOrigin func(r *http.Request) bool
	// Subprotocols are the server's subprotocols: the first of the
	// client's Sec-WebSocket-Protocol list that is among them is chosen.
	Subprotocols []string
	// EnableCompression negotiates permessage-deflate (RFC 7692) with a
	// client that offers it: every message is then compressed on its own
	// (no context takeover either way), so an idle connection holds no
	// compression state.
	EnableCompression bool
	// MaxMessageSize is the largest message accepted, in bytes (after
	// decompression); past it the connection is closed with 1009. 0 means
	// DefaultMaxMessageSize; < 0, no limit (2^62).
	MaxMessageSize int64
	// WriteBufferLimit bounds the bytes queued for one connection, in
	// bytes: a write that would pass it (with something queued already)
	// fails with ErrSlowConsumer, nothing queued, the connection open. 0
	// means DefaultWriteBufferLimit. On the goroutine path writes block
	// instead.
	WriteBufferLimit int
	// ReadTimeout closes a connection that received nothing for that
	// long (the TCP connection is reset; OnClose gets 1006). 0: none.
	ReadTimeout time.Duration
	// IdleTimeout closes, with 1001, a connection on which no message
	// went either way for that long (pings and pongs do not count). 0:
	// none.
	IdleTimeout time.Duration
	// PingInterval sends a ping that often; a peer from which nothing at
	// all arrived over a whole interval after a ping is dead: its
	// connection is closed (1006). 0: no pings.
	PingInterval time.Duration
}

func (u *Upgrader) writeLimit() int {
	if u.WriteBufferLimit > 0 {
		return u.WriteBufferLimit
	}
	return DefaultWriteBufferLimit
}

func (u *Upgrader) maxMessage() int64 {
	switch {
	case u.MaxMessageSize > 0:
		return u.MaxMessageSize
	case u.MaxMessageSize < 0:
		return 1 << 62 // no limit, with room for the arithmetic of limit+1
	}
	return DefaultMaxMessageSize
}

// HandshakeError is the error of an Upgrade whose request was refused;
// Status is the HTTP status answered.
type HandshakeError struct {
	Status int
	Reason string
}

func (e *HandshakeError) Error() string { return "uringws: handshake refused: " + e.Reason }

// handshake is what an accepted request negotiated.
type handshake struct {
	accept   string
	subproto string
	ext      string // the permessage-deflate answer, or ""
}

// checkRequest applies the handshake rules of RFC 6455 section 4.2.1.
func (u *Upgrader) checkRequest(r *http.Request) (handshake, *HandshakeError) {
	var hs handshake
	refuse := func(status int, reason string) (handshake, *HandshakeError) {
		return hs, &HandshakeError{status, reason}
	}
	if r.Method != http.MethodGet {
		return refuse(http.StatusMethodNotAllowed, "request method is not GET")
	}
	if !headerHasToken(r.Header, "Connection", "upgrade") {
		return refuse(http.StatusBadRequest, "'upgrade' token not found in 'Connection' header")
	}
	if !headerHasToken(r.Header, "Upgrade", "websocket") {
		return refuse(http.StatusBadRequest, "'websocket' token not found in 'Upgrade' header")
	}
	if r.Header.Get("Sec-Websocket-Version") != "13" {
		return refuse(http.StatusUpgradeRequired, "unsupported version: 13 not found in 'Sec-Websocket-Version' header")
	}
	key := r.Header.Get("Sec-Websocket-Key")
	if k, err := base64.StdEncoding.DecodeString(key); err != nil || len(k) != 16 {
		return refuse(http.StatusBadRequest, "'Sec-WebSocket-Key' header must be Base64 encoded value of 16-byte in length")
	}
	check := u.CheckOrigin
	if check == nil {
		check = sameOrigin
	}
	if !check(r) {
		return refuse(http.StatusForbidden, "request origin not allowed by Upgrader.CheckOrigin")
	}
	hs.accept = acceptKey(key)
	hs.subproto = u.selectSubprotocol(r)
	if u.EnableCompression {
		hs.ext = negotiateDeflate(r.Header)
	}
	return hs, nil
}

func sameOrigin(r *http.Request) bool {
	origin := r.Header["Origin"]
	if len(origin) == 0 {
		return true
	}
	u, err := url.Parse(origin[0])
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

func (u *Upgrader) selectSubprotocol(r *http.Request) string {
	for _, v := range r.Header.Values("Sec-Websocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if !isToken(p) {
				continue
			}
			for _, s := range u.Subprotocols {
				if p == s {
					return s
				}
			}
		}
	}
	return ""
}

// isToken reports whether s is an RFC 9110 token (a subprotocol must be
// one).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// headerHasToken reports whether a comma-separated header holds token
// (ASCII case-insensitive).
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

var keyGUID = []byte("258EAFA5-E914-47DA-95CA-C5AB0DC85B11")

func acceptKey(key string) string {
	h := sha1.New()
	h.Write([]byte(key))
	h.Write(keyGUID)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// response101 is the handshake's answer, with the headers the handler set
// on w (cookies, say) besides the handshake's own.
func (hs *handshake) response101(extra http.Header) []byte {
	b := make([]byte, 0, 256)
	b = append(b, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	b = append(b, hs.accept...)
	b = append(b, "\r\n"...)
	if hs.subproto != "" {
		b = append(b, "Sec-WebSocket-Protocol: "+hs.subproto+"\r\n"...)
	}
	if hs.ext != "" {
		b = append(b, "Sec-WebSocket-Extensions: "+hs.ext+"\r\n"...)
	}
	for k, vs := range extra {
		switch textproto.CanonicalMIMEHeaderKey(k) {
		case "Upgrade", "Connection", "Sec-Websocket-Accept", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions", "Content-Length", "Transfer-Encoding":
			continue
		}
		for _, v := range vs {
			if strings.ContainsAny(k+v, "\r\n") {
				continue
			}
			b = append(b, k+": "+v+"\r\n"...)
		}
	}
	return append(b, "\r\n"...)
}

var errNoHijack = errors.New("uringws: the ResponseWriter can neither be taken over nor hijacked")
