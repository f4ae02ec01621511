package main

import (
	"bytes"
	"log"
	"time"
)

// crossProtocol closes cl, with no reply, when args are what an HTTP
// request makes of the RESP inline syntax: a request line (GET / HTTP/1.1,
// any method) or, as Redis treats them, a POST or a Host: header line.
// A browser made to send a request to the server (cross-protocol
// scripting) thus runs nothing that follows, its body included. It
// reports whether it closed cl; the attempt is logged at most once a
// minute, as Redis logs it.
func (s *server) crossProtocol(cl *client, args [][]byte) bool {
	if !isCrossProtocol(args) {
		return false
	}
	cl.closing = true
	if now := nowNano(); now-s.crossLogged.Load() > int64(time.Minute) {
		s.crossLogged.Store(now)
		log.Printf("resp: possible security attack: a client sent an HTTP request (%.20q); connection from %v closed", args[0], cl.c.RemoteAddr())
	}
	return true
}

// httpMethods are the request methods that crossProtocol knows.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// isCrossProtocol reports whether args are an HTTP request line, POST or
// Host: (see crossProtocol).
func isCrossProtocol(args [][]byte) bool {
	if len(args) == 0 {
		return false
	}
	if bytes.EqualFold(args[0], []byte("post")) || bytes.EqualFold(args[0], []byte("host:")) {
		return true
	}
	if len(args) != 3 || !bytes.HasPrefix(args[2], []byte("HTTP/")) {
		return false
	}
	for _, m := range httpMethods {
		if bytes.EqualFold(args[0], []byte(m)) {
			return true
		}
	}
	return false
}
