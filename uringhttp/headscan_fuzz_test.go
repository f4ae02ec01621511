package uringhttp

import (
	"strings"
	"testing"
)

// headEndLines is the head-end search as the line-by-line rule it
// implements: the first empty (or CR-only) line after the first line ends
// the head.
func headEndLines(b []byte) int {
	i := 0
	for {
		j := strings.IndexByte(string(b[i:]), '\n')
		if j < 0 {
			return -1
		}
		line := b[i : i+j]
		start := i
		i += j + 1
		if start > 0 && (len(line) == 0 || len(line) == 1 && line[0] == '\r') {
			return i
		}
	}
}

// FuzzHeadEnd: the resumed search finds what the line-by-line rule finds,
// wherever the input is split.
func FuzzHeadEnd(f *testing.F) {
	for _, s := range []string{"GET / HTTP/1.1\r\n\r\n", "\r\n\r\n", "\n\n", "a\n\r\n", "a\r\n\r\r\n\r\n", "GET /\nH: v\n\n"} {
		f.Add([]byte(s), uint16(1), uint16(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, s1, s2 uint16) {
		want := headEndLines(b)
		if got := headEnd(b, 0); got != want {
			t.Fatalf("%q: headEnd %d, want %d", b, got, want)
		}
		a, c := min(int(s1), len(b)), min(int(s2), len(b))
		if a > c {
			a, c = c, a
		}
		if headEnd(b[:a], 0) >= 0 {
			return
		}
		if got, w := headEnd(b[:c], a), headEndLines(b[:c]); got != w {
			t.Fatalf("%q resumed at %d of %d: %d, want %d", b, a, c, got, w)
		}
	})
}
