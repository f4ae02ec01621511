package uringhttp_test

import (
	"strconv"
	"strings"
	"testing"
)

// TestDifferentialContentLengthCutByEOF: a Content-Length body the client
// cuts short with its FIN. When 256 KiB or more of it never came, net/http
// counts it as too large to drain, whether or not the handler read to the
// early end, and its response says Connection: close; uringhttp counted a
// body read to its early end as drained and left the header out.
func TestDifferentialContentLengthCutByEOF(t *testing.T) {
	cut := func(name, path string, clen, sent int) diffCase {
		return diffCase{name: name, steps: []rawStep{
			{send: "POST " + path + " HTTP/1.1\r\n" + hostH + "Content-Length: " + strconv.Itoa(clen) + "\r\n\r\n" + strings.Repeat("u", sent)},
			{closeWrite: true},
		}}
	}
	runDiffSuite(t, []diffCase{
		cut("clen-cut-read-1m-300k", "/readbody", 1<<20, 300<<10),
		cut("clen-cut-read-300k-10", "/readbody", 300<<10, 10),
		cut("clen-cut-read-just-over", "/readbody", 256<<10+100, 100),
		cut("clen-cut-read-just-under", "/readbody", 256<<10+100, 101),
		cut("clen-cut-read-200k-100k", "/readbody", 200<<10, 100<<10),
		cut("clen-cut-unread-1m-300k", "/hello", 1<<20, 300<<10),
		cut("clen-cut-unread-200k-100k", "/hello", 200<<10, 100<<10),
		cut("clen-cut-readpart-1m", "/readpart", 1<<20, 10),
		cut("clen-cut-close-body-1m", "/close-body", 1<<20, 10),
	})
}
