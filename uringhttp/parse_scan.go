package uringhttp

import "bytes"

// headEnd returns the length of the request head at the start of b (up to
// and including the blank line that ends it), or -1 when it is not all
// there. Lines end in LF, optionally preceded by CR; a blank line (empty
// or a lone CR) other than the first ends the head. from is how many of
// b's first bytes an earlier call found no end in (0 the first time): the
// search resumes there, looking back at most two bytes for a CRLF CRLF
// split across the two calls, so a head that comes in many pieces is
// searched once overall.
func headEnd(b []byte, from int) int {
	i := from
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		k := i + j // an LF; the line it ends is blank if one came right before it
		if k >= 1 && b[k-1] == '\n' || k >= 2 && b[k-1] == '\r' && b[k-2] == '\n' {
			return k + 1
		}
		i = k + 1
	}
}

// validHeaderFieldByte reports whether c is a token byte (RFC 9110).
func validHeaderFieldByte(c byte) bool {
	return c < 0x80 && tokenTable[c]
}

var tokenTable = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return
}()

// validHeaderValueByte: VCHAR, SP, HTAB, and obs-text (>= 0x80).
func validHeaderValueByte(c byte) bool {
	return c >= 0x80 || c == '\t' || 0x20 <= c && c < 0x7f
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		if !validHeaderFieldByte(m[i]) {
			return false
		}
	}
	return true
}
