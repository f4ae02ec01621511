package uringws

import (
	"compress/flate"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// permessage-deflate (RFC 7692). Every message is compressed and
// decompressed on its own (no context takeover either way, which the
// server's answer requires of the client), so a connection holds no flate
// state between messages: compressors and decompressors come from pools
// for the length of one message.

// negotiateDeflate picks the first permessage-deflate offer of the
// request that can be honoured and returns the extension's answer, or "".
// An offer asking for a server window under 15 bits is declined
// (compress/flate always uses a 32 KiB window), as is one with an unknown,
// repeated or malformed parameter.
func negotiateDeflate(h http.Header) string {
	for _, v := range h.Values("Sec-WebSocket-Extensions") {
		for _, ext := range strings.Split(v, ",") {
			params := strings.Split(ext, ";")
			if !strings.EqualFold(strings.TrimSpace(params[0]), "permessage-deflate") {
				continue
			}
			if ans, ok := deflateAnswer(params[1:]); ok {
				return ans
			}
		}
	}
	return ""
}

func deflateAnswer(params []string) (string, bool) {
	const base = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
	seen := map[string]bool{}
	ans := base
	for _, p := range params {
		name, val, hasVal := strings.Cut(strings.TrimSpace(p), "=")
		name = strings.ToLower(strings.TrimSpace(name))
		val = strings.Trim(strings.TrimSpace(val), `"`)
		if seen[name] {
			return "", false
		}
		seen[name] = true
		switch name {
		case "server_no_context_takeover", "client_no_context_takeover":
			if hasVal {
				return "", false
			}
		case "server_max_window_bits":
			bits, ok := windowBits(val)
			if !ok || bits != 15 {
				return "", false
			}
			ans += "; server_max_window_bits=15"
		case "client_max_window_bits":
			if hasVal {
				if _, ok := windowBits(val); !ok {
					return "", false
				}
			}
		default:
			return "", false
		}
	}
	return ans, true
}

func windowBits(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 8 || n > 15 || v != strconv.Itoa(n) {
		return 0, false
	}
	return n, true
}

// deflateTail ends a message's deflate data for the inflater: the
// 0x00 0x00 0xff 0xff the sender stripped, then an empty final block so
// that the stream ends.
var deflateTail = []byte{0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff}

// inflater is a pooled decompressor and the reader it draws from.
type inflater struct {
	fr   io.ReadCloser
	src  []byte
	tail []byte
}

func (in *inflater) Read(p []byte) (int, error) {
	if len(in.src) > 0 {
		n := copy(p, in.src)
		in.src = in.src[n:]
		return n, nil
	}
	if len(in.tail) > 0 {
		n := copy(p, in.tail)
		in.tail = in.tail[n:]
		return n, nil
	}
	return 0, io.EOF
}

// ReadByte lets flate read without a bufio.Reader of its own.
func (in *inflater) ReadByte() (byte, error) {
	var b [1]byte
	if _, err := in.Read(b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

var inflaters sync.Pool // *inflater

// inflate decompresses a message's payload into a pooled buffer, never
// past limit bytes: a message that inflates past it fails with 1009 after
// at most limit bytes were produced.
func inflate(src []byte, limit int64) (*[]byte, error) {
	in, _ := inflaters.Get().(*inflater)
	if in == nil {
		in = &inflater{}
		in.src, in.tail = src, deflateTail
		in.fr = flate.NewReader(in)
	} else {
		in.src, in.tail = src, deflateTail
		in.fr.(flate.Resetter).Reset(in, nil)
	}
	defer func() {
		in.src, in.tail = nil, nil
		inflaters.Put(in)
	}()
	out := getBuf(min(int(limit)+1, max(3*len(src), 4096)))
	for {
		b := *out
		if len(b) == cap(b) {
			if int64(len(b)) > limit {
				putBuf(out)
				return nil, errTooBig
			}
			b = append(b, 0)[:len(b)]
		}
		room := b[len(b):cap(b)]
		if int64(len(b)+len(room)) > limit+1 {
			room = room[:limit+1-int64(len(b))]
		}
		m, err := in.fr.Read(room)
		*out = b[:len(b)+m]
		if int64(len(*out)) > limit {
			putBuf(out)
			return nil, errTooBig
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			putBuf(out)
			return nil, errInflate
		}
	}
}

// sliceWriter appends to a buffer.
type sliceWriter struct{ b *[]byte }

func (w sliceWriter) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

type deflater struct{ fw *flate.Writer }

var deflaters sync.Pool // *deflater

// compressFrame returns a pooled buffer holding a whole server frame of
// op whose payload is data compressed (RSV1 set).
func compressFrame(op byte, data []byte) *[]byte {
	d, _ := deflaters.Get().(*deflater)
	bp := getBuf(len(data)/2 + 64)
	if d == nil {
		d = &deflater{}
		d.fw, _ = flate.NewWriter(sliceWriter{(*[]byte)(nil)}, flate.BestSpeed)
	}
	body := getBuf(len(data)/2 + 64)
	d.fw.Reset(sliceWriter{body})
	d.fw.Write(data)
	d.fw.Flush()
	p := *body
	if len(p) >= 4 {
		p = p[:len(p)-4] // the sync flush's 0x00 0x00 0xff 0xff
	}
	if len(p) == 0 {
		p = append(p, 0x00) // an empty message: one empty stored block start
	}
	b := appendHeader(*bp, true, rsv1Bit, op, len(p))
	*bp = append(b, p...)
	d.fw.Reset(sliceWriter{nil})
	deflaters.Put(d)
	putBuf(body)
	return bp
}
