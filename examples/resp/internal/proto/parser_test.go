package proto

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// parseAll runs Next over b as one buffer and returns the requests (each
// joined with spaces), the bytes left and the error.
func parseAll(p *Parser, b []byte) (reqs []string, rest int, err error) {
	for {
		args, n, err := p.Next(b)
		if err != nil || n == 0 {
			return reqs, len(b), err
		}
		if len(args) > 0 {
			reqs = append(reqs, join(args))
		}
		b = b[n:]
	}
}

// parseChunks feeds b to a Parser in pieces of chunk bytes, as a
// connection receives it, keeping the unconsumed bytes between calls.
func parseChunks(p *Parser, b []byte, chunk int) (reqs []string, rest int, err error) {
	var pend []byte
	for len(b) > 0 {
		k := min(chunk, len(b))
		pend = append(pend, b[:k]...)
		b = b[k:]
		for {
			args, n, err := p.Next(pend)
			if err != nil {
				return reqs, len(pend), err
			}
			if n == 0 {
				break
			}
			if len(args) > 0 {
				reqs = append(reqs, join(args))
			}
			pend = pend[n:]
		}
	}
	return reqs, len(pend), nil
}

func join(args [][]byte) string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = string(a)
	}
	return strings.Join(s, " ")
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
		rest int   // bytes of a partial request left
		err  error // nil, or the error expected (errors.Is), or errAny
	}{
		{"set", "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", []string{"SET key value"}, 0, nil},
		{"pipelined", "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", []string{"PING", "GET k"}, 0, nil},
		{"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", []string{"ECHO "}, 0, nil},
		{"binary bulk", "*2\r\n$4\r\nECHO\r\n$4\r\n\r\n\x00\xff\r\n", []string{"ECHO \r\n\x00\xff"}, 0, nil},
		{"empty array skipped", "*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", []string{"PING"}, 0, nil},
		{"inline", "PING\r\n", []string{"PING"}, 0, nil},
		{"inline lf only", "SET a  b\tc\n", []string{"SET a b c"}, 0, nil},
		{"inline blank lines", "\r\n\n  \r\nPING\r\n", []string{"PING"}, 0, nil},
		{"partial header", "*3\r", nil, 3, nil},
		{"partial bulk", "*2\r\n$3\r\nGET\r\n$5\r\nab", nil, 19, nil},
		{"partial after one", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI", []string{"PING"}, 10, nil},
		{"partial inline", "PIN", nil, 3, nil},
		{"bulk len 512 MiB", "*2\r\n$3\r\nSET\r\n$536870912\r\n", nil, 0, ErrBulkLen},
		{"bulk len negative", "*1\r\n$-1\r\n", nil, 0, ErrBulkLen},
		{"bulk len not a number", "*1\r\n$x\r\n", nil, 0, ErrBulkLen},
		{"bulk len overflow", "*1\r\n$99999999999999999999999\r\n", nil, 0, ErrBulkLen},
		{"array len huge", "*9999999999\r\n", nil, 0, ErrMultibulkLen},
		{"array len not a number", "*a\r\n", nil, 0, ErrMultibulkLen},
		{"array len bad CR", "*1\rx", nil, 0, ErrMultibulkLen},
		{"not a bulk", "*1\r\n:1\r\n", nil, 0, errAny},
		{"bulk not CRLF ended", "*1\r\n$1\r\nabc\r\n", nil, 0, ErrBadLine},
	}
	for _, tt := range tests {
		for _, chunk := range []int{0, 1, 2, 7} {
			t.Run(fmt.Sprintf("%s/chunk%d", tt.name, chunk), func(t *testing.T) {
				var p Parser
				var reqs []string
				var rest int
				var err error
				if chunk == 0 {
					reqs, rest, err = parseAll(&p, []byte(tt.in))
				} else {
					reqs, rest, err = parseChunks(&p, []byte(tt.in), chunk)
				}
				switch {
				case tt.err == errAny && err == nil, tt.err != errAny && !errors.Is(err, tt.err):
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				if !equal(reqs, tt.want) {
					t.Fatalf("requests = %q, want %q", reqs, tt.want)
				}
				if tt.err == nil && rest != tt.rest {
					t.Fatalf("%d bytes left, want %d", rest, tt.rest)
				}
			})
		}
	}
}

var errAny = errors.New("any error")

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLimits: each limit turns a request over it into an error, whether
// the request is complete or still partial, so a connection holds at most
// MaxRequest bytes of it.
func TestLimits(t *testing.T) {
	p := Parser{MaxBulk: 10, MaxArgs: 3, MaxInline: 8, MaxRequest: 40}
	cases := []struct {
		name string
		in   string
		err  error
	}{
		{"bulk over MaxBulk", "*1\r\n$11\r\n", ErrBulkLen},
		{"bulk at MaxBulk", "*1\r\n$10\r\n0123456789\r\n", nil},
		{"array over MaxArgs", "*4\r\n", ErrMultibulkLen},
		{"inline over MaxInline", "123456789", ErrInlineTooBig},
		{"inline line over MaxInline", "123456789\r\n", ErrInlineTooBig},
		{"request over MaxRequest", "*3\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n$10\r\n", ErrRequestBig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p.Reset()
			_, _, err := parseAll(&p, []byte(c.in))
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
		})
	}
}

// TestSplitEverywhere: a pipeline of requests split at every byte offset,
// parsed in two calls, gives the requests of the whole.
func TestSplitEverywhere(t *testing.T) {
	in := []byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\n0123456789\r\nPING\r\n*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n")
	var p Parser
	want, _, err := parseAll(&p, in)
	if err != nil || len(want) != 3 {
		t.Fatalf("whole: %q, %v", want, err)
	}
	for cut := 0; cut <= len(in); cut++ {
		var q Parser
		var got []string
		pend := append([]byte(nil), in[:cut]...)
		for _, more := range [][]byte{nil, in[cut:]} {
			pend = append(pend, more...)
			for {
				args, n, err := q.Next(pend)
				if err != nil {
					t.Fatalf("cut %d: %v", cut, err)
				}
				if n == 0 {
					break
				}
				got = append(got, join(args))
				pend = pend[n:]
			}
		}
		if !equal(got, want) || len(pend) != 0 {
			t.Fatalf("cut %d: %q (left %d), want %q", cut, got, len(pend), want)
		}
	}
}

// TestResumeIsLinear: an array of many elements arriving a few bytes at a
// time is parsed once, not again from its start at every call (which would
// let a peer make the server do quadratic work).
func TestResumeIsLinear(t *testing.T) {
	const n = 20000
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", n)
	for i := 0; i < n; i++ {
		b.WriteString("$1\r\nx\r\n")
	}
	in := b.Bytes()
	var p Parser
	done := false
	for cut := 1; !done; cut = min(cut+3, len(in)) {
		args, k, err := p.Next(in[:cut])
		if err != nil {
			t.Fatal(err)
		}
		if k > 0 {
			if len(args) != n || k != len(in) {
				t.Fatalf("%d args in %d bytes, want %d in %d", len(args), k, n, len(in))
			}
			done = true
			continue
		}
		// Every complete element is behind the resume offset: the
		// next call starts at most one element (7 bytes) back.
		if cut > 10 && cut-p.off > 7 {
			t.Fatalf("after %d bytes the parser resumes at %d", cut, p.off)
		}
	}
	if !done || p.Pending() {
		t.Fatal("request not complete")
	}
}

// TestNoAllocs: a GET or SET request, once the parser is warm, allocates
// nothing.
func TestNoAllocs(t *testing.T) {
	in := []byte("*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n")
	var p Parser
	parseAll(&p, in)
	allocs := testing.AllocsPerRun(100, func() {
		b := in
		for {
			_, n, err := p.Next(b)
			if err != nil || n == 0 {
				break
			}
			b = b[n:]
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per pipeline", allocs)
	}
}

func TestAppend(t *testing.T) {
	var b []byte
	b = AppendSimple(b, "OK")
	b = AppendError(b, "ERR bad\r\nthing")
	b = AppendInt(b, -42)
	b = AppendBulk(b, []byte("v"))
	b = AppendBulkString(b, "")
	b = AppendNull(b)
	b = AppendArray(b, 2)
	want := "+OK\r\n-ERR bad  thing\r\n:-42\r\n$1\r\nv\r\n$0\r\n\r\n$-1\r\n*2\r\n"
	if string(b) != want {
		t.Fatalf("%q, want %q", b, want)
	}
}

func BenchmarkParseGET(b *testing.B) {
	in := []byte("*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n")
	var p Parser
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		p.Next(in)
	}
}

// TestLengthsAsRedis: lengths with a leading zero or "-0" are protocol
// errors, as Redis's string2ll makes them.
func TestLengthsAsRedis(t *testing.T) {
	for _, in := range []string{"*01\r\n$4\r\nPING\r\n", "*1\r\n$04\r\nPING\r\n", "*-0\r\n", "*1\r\n$-0\r\n\r\n", "*00\r\n"} {
		var p Parser
		if args, n, err := p.Next([]byte(in)); err == nil {
			t.Errorf("%q: %q, n %d; want a protocol error", in, join(args), n)
		}
	}
	var p Parser
	if args, _, err := p.Next([]byte("*1\r\n$0\r\n\r\n")); err != nil || len(args) != 1 {
		t.Errorf("$0: %q %v", join(args), err)
	}
}
