package uringhttp_test

import (
	"strings"
	"testing"
)

// TestDifferentialBigHeads: heads over 64 KiB, which uringhttp parses on
// the goroutine that serves them rather than on the loop, answer as
// net/http answers them, first on a connection or after a request,
// well-formed or not, with a body or requests behind them, or the
// client's half-close.
func TestDifferentialBigHeads(t *testing.T) {
	pad := "X-Pad: " + strings.Repeat("p", 100<<10) + "\r\n"
	many := strings.Repeat("X-Many: "+strings.Repeat("m", 50)+"\r\n", 2000)
	big := "GET /echo HTTP/1.1\r\n" + hostH + pad + "\r\n"
	runDiffSuite(t, []diffCase{
		{name: "big-head", req: big},
		{name: "big-head-many-fields", req: "GET /echo HTTP/1.1\r\n" + hostH + many + "\r\n"},
		{name: "big-head-pipelined", req: big + get("/hello") + big},
		{name: "big-head-after-request", req: get("/hello") + big},
		{name: "big-head-after-request-split", steps: []rawStep{{send: get("/hello")}, {waitFor: "Hello, World!"}, {send: big}}},
		{name: "big-head-post-body", req: "POST /echo HTTP/1.1\r\n" + hostH + pad + "Content-Length: 5\r\n\r\nhello" + get("/hello")},
		{name: "big-head-half-close", steps: []rawStep{{send: big}, {closeWrite: true}}},
		{name: "big-head-bad-field", req: "GET /echo HTTP/1.1\r\n" + hostH + pad + "Bad Field: x\r\n\r\n" + get("/hello")},
		{name: "big-head-no-host", req: "GET /echo HTTP/1.1\r\n" + pad + "\r\n"},
		{name: "big-head-bad-te", req: "POST /echo HTTP/1.1\r\n" + hostH + pad + "Transfer-Encoding: gzip\r\n\r\n"},
		{name: "big-head-bad-after-request", steps: []rawStep{{send: get("/hello") + "GET /echo HTTP/1.1\r\n" + pad + "\r\n"}, {closeWrite: true}}},
		{name: "big-head-trickled", steps: trickle(big, 8<<10, 0)},
	})
}
