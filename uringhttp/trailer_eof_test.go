package uringhttp_test

import (
	"strings"
	"testing"
)

// TestDifferentialTrailerEOF: a chunked body whose trailer the client cuts
// short with its FIN, or ends with a bare LF before the FIN. net/http's
// handler sees "http: unexpected EOF reading trailer" when under two bytes
// of trailer came, "http: suspiciously long trailer after chunked body"
// when no CRLF CRLF came within 4 KiB, and the trailer only once a CRLF
// CRLF shows; uringhttp's saw a bare "unexpected EOF", or nil and a
// trailer a bare LF had ended.
func TestDifferentialTrailerEOF(t *testing.T) {
	const pre = "POST /echo HTTP/1.1\r\n" + hostH + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"
	halfClose := func(name, tail string) diffCase {
		return diffCase{name: name, steps: []rawStep{{send: pre + tail}, {closeWrite: true}}}
	}
	long := "X-Long: " + strings.Repeat("l", 4090) + "\r\n"
	cases := []diffCase{
		halfClose("trailer-eof-empty", ""),
		halfClose("trailer-eof-one-byte", "X"),
		halfClose("trailer-eof-cr", "\r"),
		halfClose("trailer-eof-lf", "\n"),
		halfClose("trailer-eof-two-bytes", "Fo"),
		halfClose("trailer-eof-mid-line", "Foo: bar"),
		halfClose("trailer-eof-after-line", "Foo: bar\r\n"),
		halfClose("trailer-eof-after-lines", "Foo: bar\r\nBaz: 1\r\n"),
		halfClose("trailer-eof-mid-blank-line", "Foo: bar\r\n\r"),
		halfClose("trailer-bare-lf-end-eof", "Foo: bar\n\n"),
		halfClose("trailer-crlf-lf-end-eof", "Foo: bar\r\n\n"),
		halfClose("trailer-lf-crlf-end-eof", "Foo: bar\n\r\n"),
		halfClose("trailer-whole-eof", "Foo: bar\r\n\r\n"),
		halfClose("trailer-bare-lf-then-request", "Foo: bar\n\n"+get("/hello")),
		halfClose("trailer-bare-lf-then-bare-lf-request", "Foo: bar\n\nGET /hello HTTP/1.1\nHost: x\n\n"),
		halfClose("trailer-crlf-past-4k", long+"\r\n"),
		halfClose("trailer-crlf-within-4k", long[:4000]+"\r\n\r\n"),
		{name: "trailer-bare-lf-then-request-open", req: pre + "Foo: bar\n\n" + get("/hello")},
	}
	runDiffSuite(t, cases)
}
