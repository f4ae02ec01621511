package uringhttp

import "bytes"

// headEnd returns the length of the request head at the start of b (up to
// and including the blank line that ends it), or -1 when it is not all
// there. Lines end in LF, optionally preceded by CR.
func headEnd(b []byte) int {
	i := 0
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		line := b[i : i+j]
		i += j + 1
		if i-j-1 > 0 && (len(line) == 0 || len(line) == 1 && line[0] == '\r') {
			return i // a blank line after the request line
		}
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
