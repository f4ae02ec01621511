package uringhttp_test

import "testing"

// TestDifferentialExpectAndConnectionTokens: net/http finds Expect's
// 100-continue and Connection's close and keep-alive in the first value
// of the header as a token between spaces, tabs or commas, not only as an
// element of a comma-separated list ("x 100-continue" asks for 100
// Continue; uringhttp answered 417), and ignores 100-continue on HTTP/1.0
// however it is written.
func TestDifferentialExpectAndConnectionTokens(t *testing.T) {
	withBody := func(name, proto, expect string) diffCase {
		head := "POST /readbody " + proto + "\r\n"
		if proto == "HTTP/1.0" {
			// No 100 Continue to wait for: the body follows at once.
			return diffCase{name: name, req: head + "Content-Length: 5\r\nExpect: " + expect + "\r\n\r\nhello"}
		}
		return diffCase{name: name, steps: []rawStep{
			{send: head + hostH + "Content-Length: 5\r\nExpect: " + expect + "\r\n\r\n"},
			{waitFor: "\r\n\r\n"},
			{send: "hello"},
		}}
	}
	getConn := func(name, proto, conn string) diffCase {
		host := hostH
		if proto == "HTTP/1.0" {
			host = ""
		}
		return diffCase{name: name, req: "GET /hello " + proto + "\r\n" + host + "Connection: " + conn + "\r\n\r\n" + get("/hello")}
	}
	runDiffSuite(t, []diffCase{
		withBody("expect-space-list", "HTTP/1.1", "x 100-continue"),
		withBody("expect-tab-list", "HTTP/1.1", "x\t100-continue"),
		withBody("expect-token-first", "HTTP/1.1", "100-continue y"),
		withBody("expect-comma-list", "HTTP/1.1", "foo, 100-Continue"),
		withBody("expect-glued", "HTTP/1.1", "x100-continue"),
		withBody("expect-suffix", "HTTP/1.1", "100-continuex"),
		withBody("expect-semicolon", "HTTP/1.1", "100-continue;q=1"),
		withBody("expect-http10-space-list", "HTTP/1.0", "x 100-continue"),
		withBody("expect-http10-plain", "HTTP/1.0", "100-continue"),
		withBody("expect-http10-unknown", "HTTP/1.0", "teapot"),
		{name: "expect-second-header", steps: []rawStep{
			{send: "POST /readbody HTTP/1.1\r\n" + hostH + "Content-Length: 5\r\nExpect: foo\r\nExpect: 100-continue\r\n\r\n"},
			{waitFor: "\r\n\r\n"},
			{send: "hello"},
		}},
		{name: "expect-no-body", req: "POST /readbody HTTP/1.1\r\n" + hostH + "Content-Length: 0\r\nExpect: x 100-continue\r\n\r\n"},
		getConn("connection-space-close", "HTTP/1.1", "foo close"),
		getConn("connection-close-space", "HTTP/1.1", "close bar"),
		getConn("connection-glued-close", "HTTP/1.1", "fooclose"),
		getConn("connection-http10-space-keepalive", "HTTP/1.0", "x keep-alive"),
		getConn("connection-http10-keepalive", "HTTP/1.0", "keep-alive"),
		{name: "connection-second-header-close", req: "GET /hello HTTP/1.1\r\n" + hostH + "Connection: foo\r\nConnection: x close\r\n\r\n" + get("/hello")},
	})
}
