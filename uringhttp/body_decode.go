package uringhttp

import (
	"bytes"
	"errors"
	"io"
)

// Decoding a request body out of the buffered input: Content-Length and
// chunked framing, trailers, chunk sizes.

// decode takes body bytes out of the buffered input into p: (0, nil) when
// more input is needed.
func (b *body) decode(p []byte) (int, error) {
	h := b.h
	if !b.chunked {
		in := h.in[h.r:]
		if len(in) == 0 {
			return 0, nil
		}
		n := min(int64(len(p)), int64(len(in)), b.remain)
		copy(p, in[:n])
		h.consumed(int(n))
		b.remain -= n
		return int(n), nil
	}
	total := 0
	for {
		in := h.in[h.r:]
		switch b.cstate {
		case csSize:
			i := bytes.IndexByte(in, '\n')
			if i < 0 {
				if len(in) >= 4096 {
					return total, errLineTooLong
				}
				return total, nil
			}
			line := in[:i+1]
			if idx := bytes.IndexByte(line, '\r'); idx == -1 {
				return total, errors.New("chunked line ends with bare LF")
			} else if idx != len(line)-2 {
				return total, errors.New("invalid CR in chunked line")
			}
			line = line[:len(line)-2]
			if len(line) >= 4096 {
				return total, errLineTooLong
			}
			b.excess += int64(len(line)) + 2
			for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
				line = line[:len(line)-1]
			}
			if j := bytes.IndexByte(line, ';'); j >= 0 {
				line = line[:j]
			}
			n, err := parseHexUint(line)
			if err != nil {
				return total, err
			}
			h.consumed(i + 1)
			b.excess -= 16 + 2*int64(n)
			b.excess = max(b.excess, 0)
			if b.excess > 16*1024 {
				return total, errors.New("chunked encoding contains too much non-data")
			}
			if n == 0 {
				b.cstate = csTrailer
				continue
			}
			if total > 0 {
				// have data: do not wait for the next chunk
				b.remain, b.cstate = int64(n), csData
				return total, nil
			}
			b.remain, b.cstate = int64(n), csData
		case csData:
			if len(in) == 0 || len(p) == 0 {
				return total, nil
			}
			n := min(int64(len(p)), int64(len(in)), b.remain)
			copy(p, in[:n])
			h.consumed(int(n))
			p = p[n:]
			total += int(n)
			b.remain -= n
			if b.remain == 0 {
				b.cstate = csCRLF
			}
		case csCRLF:
			if len(in) < 2 {
				return total, nil
			}
			if in[0] != '\r' || in[1] != '\n' {
				return total, errors.New("malformed chunked encoding")
			}
			h.consumed(2)
			b.cstate = csSize
			if total > 0 {
				if i := bytes.IndexByte(in[2:], '\n'); i < 0 {
					return total, nil
				}
			}
		case csTrailer:
			if total > 0 {
				return total, nil
			}
			if len(in) >= 2 && in[0] == '\r' && in[1] == '\n' {
				h.consumed(2)
				b.cstate = csDone
				return 0, io.EOF
			}
			// As net/http: the input ended (or its read deadline passed)
			// before two bytes of trailer is an unexpected EOF; then a
			// trailer section is taken only once a CRLF CRLF shows
			// within its 4 KiB read buffer, the section ending at its
			// first blank line (which a bare LF may make), and input
			// that ends without one is a suspiciously long trailer.
			ended := h.rdErr != nil || h.dlIs(dlRexp)
			if len(in) < 2 {
				if ended {
					return 0, errTrailerEOF
				}
				return 0, nil
			}
			const maxTrailer = 4096
			if !bytes.Contains(in[:min(len(in), maxTrailer)], doubleCRLF) {
				if ended || len(in) >= maxTrailer {
					return 0, errors.New("http: suspiciously long trailer after chunked body")
				}
				return 0, nil
			}
			end := trailerEnd(in)
			hdr, _, err := parseHeader(string(in[:end]))
			if err != nil {
				return 0, err
			}
			h.consumed(end)
			if b.req.Trailer == nil {
				b.req.Trailer = hdr
			} else {
				for k, v := range hdr {
					b.req.Trailer[k] = v
				}
			}
			b.cstate = csDone
			return 0, io.EOF
		case csDone:
			return total, io.EOF
		}
	}
}

// trailerEnd returns the length of the trailer block (ending with a blank
// line) at the start of b, or -1.
func trailerEnd(b []byte) int {
	i := 0
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		line := b[i : i+j]
		i += j + 1
		if len(line) == 0 || len(line) == 1 && line[0] == '\r' {
			return i
		}
	}
}

var errLineTooLong = errors.New("header line too long")

// errTrailerEOF is net/http's error for input that ends inside a
// chunked body's trailer.
var errTrailerEOF = errors.New("http: unexpected EOF reading trailer")

var doubleCRLF = []byte("\r\n\r\n")

func parseHexUint(v []byte) (n uint64, err error) {
	if len(v) == 0 {
		return 0, errors.New("empty hex number for chunk length")
	}
	for i, b := range v {
		switch {
		case '0' <= b && b <= '9':
			b = b - '0'
		case 'a' <= b && b <= 'f':
			b = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			b = b - 'A' + 10
		default:
			return 0, errors.New("invalid byte in chunk length")
		}
		if i == 16 {
			return 0, errors.New("http chunk length too large")
		}
		n <<= 4
		n |= uint64(b)
	}
	return
}
