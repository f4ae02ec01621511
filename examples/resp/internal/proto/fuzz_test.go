package proto

import (
	"errors"
	"testing"
)

// FuzzParser feeds arbitrary bytes to the parser whole and in pieces: no
// panic, the same requests and outcome either way, and what the parser
// keeps for a partial request bounded by the bytes it was given.
func FuzzParser(f *testing.F) {
	for _, s := range []string{
		"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n",
		"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\nPING\r\n",
		"*1\r\n$536870912\r\n",
		"*99999999\r\n$1\r\na\r\n",
		"*-1\r\n*0\r\n\r\nECHO  hi\n",
		"*1\r\n$3\r\nabcd\r\n",
		"ECHO \"a\\x41\\n\" 'b\\'' c\"d e\"\r\n",
	} {
		f.Add([]byte(s), uint8(1))
		f.Add([]byte(s), uint8(5))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		limits := Parser{MaxBulk: 1 << 10, MaxArgs: 64, MaxInline: 256, MaxRequest: 4 << 10}
		p1 := limits
		whole, rest1, err1 := parseAll(&p1, data)
		p2 := limits
		parts, rest2, err2 := parseChunks(&p2, data, int(chunk)+1)
		if (err1 == nil) != (err2 == nil) || !equal(whole, parts) {
			t.Fatalf("whole: %q %v; in pieces of %d: %q %v", whole, err1, int(chunk)+1, parts, err2)
		}
		if err1 == nil && rest1 != rest2 {
			t.Fatalf("left %d whole, %d in pieces", rest1, rest2)
		}
		var pe *Error
		if err1 != nil && !errors.As(err1, &pe) {
			t.Fatalf("error %v is not a protocol error", err1)
		}
		for _, p := range []*Parser{&p1, &p2} {
			if p.got > len(data)/4+1 || p.off > len(data) {
				t.Fatalf("parser counts %d elements, offset %d, for %d bytes", p.got, p.off, len(data))
			}
		}
		// The one-pass path takes only what array would take, the same way.
		if pw, pa := limits, limits; len(data) > 0 && data[0] == '*' {
			if args, n, ok := pw.whole(data); ok {
				want, wn, err := pa.array(data)
				if err != nil || n != wn || join(args) != join(want) {
					t.Fatalf("whole: %q, %d; array: %q, %d, %v", join(args), n, join(want), wn, err)
				}
			}
		}
		if err1 == nil && rest1 > limits.MaxRequest && rest1 > limits.MaxInline {
			t.Fatalf("%d bytes of a partial request accepted, over MaxRequest", rest1)
		}
	})
}
