package uringhttp

import (
	"strings"
	"testing"
)

// TestHeadScanResumes: a head that arrives in many small pieces is
// searched for its end once overall, not once per piece. The search
// rescanned the whole unfinished head each time bytes came: a 1 MB head
// sent as 64-byte lines cost half a terabyte of comparisons and most of
// the CPU. Between pieces, the bytes the connection was already given
// (but the last two, which a CRLF CRLF split across pieces needs) are
// overwritten with blank lines: a search that looks at them again finds
// a false end there.
func TestHeadScanResumes(t *testing.T) {
	var head strings.Builder
	head.WriteString("GET /hello HTTP/1.1\r\nHost: x\r\n")
	for head.Len() < 64<<10 {
		head.WriteString("X-Line: " + strings.Repeat("v", 54) + "\r\n")
	}
	head.WriteString("\r\n")
	want := head.Len()
	for _, piece := range []int{1, 2, 3, 63, 64, 1000} {
		buf := []byte(head.String())
		h := &hconn{srv: &srvHandler{s: &Server{}}, ctx: t.Context()}
		prev := 0
		for end := min(piece, len(buf)); ; end = min(end+piece, len(buf)) {
			for i := 0; i < prev-2; i++ {
				buf[i] = '\n'
			}
			_, n, err := h.srv.parse(h, buf[:end], false)
			if end < len(buf) {
				if err != errIncomplete {
					t.Fatalf("pieces of %d: after %d of %d bytes: %v (head end at %d): the search went back over bytes it had seen", piece, end, len(buf), err, n)
				}
				prev = end
				continue
			}
			// The head's first bytes are blank lines now: the parse of
			// the whole fails, but it must be at the real end, not at
			// errIncomplete or a false end.
			if err == errIncomplete || n != 0 && n != want {
				t.Fatalf("pieces of %d: whole head: n=%d err=%v, want the end at %d", piece, n, err, want)
			}
			break
		}
	}
}
