package uringws

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand"
	"testing"
	"unicode/utf8"
)

// clientFrame builds a masked client frame.
func clientFrame(fin bool, rsv, op byte, key [4]byte, payload []byte) []byte {
	b0 := op | rsv
	if fin {
		b0 |= finBit
	}
	n := len(payload)
	var b []byte
	switch {
	case n <= 125:
		b = []byte{b0, maskBit | byte(n)}
	case n <= 0xffff:
		b = []byte{b0, maskBit | 126, byte(n >> 8), byte(n)}
	default:
		b = binary.BigEndian.AppendUint64([]byte{b0, maskBit | 127}, uint64(n))
	}
	b = append(b, key[:]...)
	start := len(b)
	b = append(b, payload...)
	for i := range payload {
		b[start+i] ^= key[i&3]
	}
	return b
}

// recSink records what a reader delivers.
type recSink struct {
	msgs  []string
	types []MessageType
	ctrl  []string
}

func (s *recSink) onMessage(t MessageType, p []byte) {
	s.types = append(s.types, t)
	s.msgs = append(s.msgs, string(p))
}

func (s *recSink) onControl(op byte, p []byte) (bool, error) {
	s.ctrl = append(s.ctrl, string(rune('0'+op))+string(p))
	return op == opClose, nil
}

// feedSplit feeds data to a fresh reader in pieces cut at the given
// points, joining the unconsumed rest with the next piece as the loop
// does.
func feedSplit(data []byte, cuts []int, max int64, deflate bool) (*recSink, error) {
	r := &reader{maxMsg: max, deflate: deflate}
	s := &recSink{}
	var pending []byte
	last := 0
	cuts = append(cuts, len(data))
	for _, c := range cuts {
		if c < last || c > len(data) {
			continue
		}
		pending = append(pending, data[last:c]...)
		last = c
		n, err := r.feed(s, pending)
		if err != nil {
			return s, err
		}
		pending = append([]byte(nil), pending[n:]...)
		if len(s.ctrl) > 0 && s.ctrl[len(s.ctrl)-1][0] == '0'+opClose {
			break
		}
	}
	return s, nil
}

func TestMaskBytesMatchesBytewise(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 300; n++ {
		for pos := 0; pos < 4; pos++ {
			b := make([]byte, n)
			rng.Read(b)
			want := append([]byte(nil), b...)
			key := [4]byte{byte(rng.Int()), byte(rng.Int()), byte(rng.Int()), byte(rng.Int())}
			for i := range want {
				want[i] ^= key[(pos+i)&3]
			}
			if got := maskBytes(key, pos, b); got != (pos+n)&3 {
				t.Fatalf("n=%d pos=%d: position %d", n, pos, got)
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("n=%d pos=%d: mismatch", n, pos)
			}
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 125, 126, 127, 0xffff, 0x10000, 1 << 20} {
		b := appendHeader(nil, true, rsv1Bit, opBinary, n)
		if len(b) != headerSize(n) {
			t.Fatalf("n=%d: header %d bytes, headerSize %d", n, len(b), headerSize(n))
		}
		h, hn, err := parseHeader(b)
		if err != nil || hn != len(b) || h.length != int64(n) || !h.fin || h.rsv != rsv1Bit || h.op != opBinary || h.masked {
			t.Fatalf("n=%d: %+v %d %v", n, h, hn, err)
		}
		for i := 0; i < len(b); i++ {
			if _, hn, _ := parseHeader(b[:i]); hn != 0 {
				t.Fatalf("n=%d: header complete at %d of %d bytes", n, i, len(b))
			}
		}
	}
}

func TestLength2To63Refused(t *testing.T) {
	b := []byte{finBit | opBinary, maskBit | 127, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}
	_, err := feedSplit(b, nil, 1<<62, false)
	var ce *closeError
	if !errors.As(err, &ce) || ce.code != CloseProtocolError {
		t.Fatalf("2^63 length: %v, want a 1002", err)
	}
}

func TestReaderRules(t *testing.T) {
	k := [4]byte{1, 2, 3, 4}
	cat := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	big := bytes.Repeat([]byte("x"), 200)
	tests := []struct {
		name    string
		in      []byte
		deflate bool
		msgs    []string
		ctrl    []string
		code    int
	}{
		{"text", clientFrame(true, 0, opText, k, []byte("hello")), false, []string{"hello"}, nil, 0},
		{"empty binary", clientFrame(true, 0, opBinary, k, nil), false, []string{""}, nil, 0},
		{"fragments with ping between", cat(
			clientFrame(false, 0, opText, k, []byte("he")),
			clientFrame(true, 0, opPing, k, []byte("p")),
			clientFrame(false, 0, opContinuation, k, nil),
			clientFrame(true, 0, opContinuation, k, []byte("llo"))), false, []string{"hello"}, []string{"9p"}, 0},
		{"unmasked", []byte{finBit | opText, 1, 'a'}, false, nil, nil, CloseProtocolError},
		{"rsv2", clientFrame(true, 0x20, opText, k, []byte("a")), false, nil, nil, CloseProtocolError},
		{"rsv1 without deflate", clientFrame(true, rsv1Bit, opText, k, []byte("a")), false, nil, nil, CloseProtocolError},
		{"rsv1 on continuation", cat(clientFrame(false, rsv1Bit, opText, k, []byte{0}),
			clientFrame(true, rsv1Bit, opContinuation, k, []byte{0})), true, nil, nil, CloseProtocolError},
		{"opcode 3", clientFrame(true, 0, 3, k, nil), false, nil, nil, CloseProtocolError},
		{"opcode 11", clientFrame(true, 0, 11, k, nil), false, nil, nil, CloseProtocolError},
		{"fragmented ping", clientFrame(false, 0, opPing, k, nil), false, nil, nil, CloseProtocolError},
		{"ping over 125", clientFrame(true, 0, opPing, k, big[:126]), false, nil, nil, CloseProtocolError},
		{"continuation first", clientFrame(true, 0, opContinuation, k, []byte("a")), false, nil, nil, CloseProtocolError},
		{"text inside fragments", cat(clientFrame(false, 0, opText, k, []byte("a")),
			clientFrame(true, 0, opText, k, []byte("b"))), false, nil, nil, CloseProtocolError},
		{"bad utf8", clientFrame(true, 0, opText, k, []byte{0xce, 0xba, 0xff}), false, nil, nil, CloseInvalidFramePayloadData},
		{"utf8 across fragments", cat(clientFrame(false, 0, opText, k, []byte{0xce}),
			clientFrame(true, 0, opContinuation, k, []byte{0xba})), false, []string{"κ"}, nil, 0},
		{"utf8 cut at end", clientFrame(true, 0, opText, k, []byte{'a', 0xce}), false, nil, nil, CloseInvalidFramePayloadData},
		{"too big", clientFrame(true, 0, opBinary, k, big), false, nil, nil, CloseMessageTooBig},
		{"too big in fragments", cat(clientFrame(false, 0, opBinary, k, big[:100]),
			clientFrame(true, 0, opContinuation, k, big[:100])), false, nil, nil, CloseMessageTooBig},
	}
	for _, tt := range tests {
		for cut := 0; cut <= len(tt.in); cut++ {
			s, err := feedSplit(tt.in, []int{cut}, 150, tt.deflate)
			code := 0
			var ce *closeError
			if errors.As(err, &ce) {
				code = ce.code
			} else if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if code != tt.code {
				t.Fatalf("%s (cut %d): code %d, want %d", tt.name, cut, code, tt.code)
			}
			if tt.code == 0 && (len(s.msgs) != len(tt.msgs) || len(s.ctrl) != len(tt.ctrl)) {
				t.Fatalf("%s (cut %d): messages %q control %q, want %q %q", tt.name, cut, s.msgs, s.ctrl, tt.msgs, tt.ctrl)
			}
			for i := range tt.msgs {
				if tt.code == 0 && s.msgs[i] != tt.msgs[i] {
					t.Fatalf("%s: message %q, want %q", tt.name, s.msgs[i], tt.msgs[i])
				}
			}
		}
	}
}

// FuzzFrames feeds arbitrary bytes to the parser whole and cut at a
// point: the same messages and the same verdict either way, no panic.
func FuzzFrames(f *testing.F) {
	k := [4]byte{9, 8, 7, 6}
	f.Add(clientFrame(true, 0, opText, k, []byte("hello")), uint16(3))
	f.Add(append(clientFrame(false, 0, opBinary, k, []byte("ab")), clientFrame(true, 0, opContinuation, k, []byte("cd"))...), uint16(7))
	f.Add(clientFrame(true, 0, opClose, k, []byte{3, 232, 'o', 'k'}), uint16(1))
	f.Add(clientFrame(true, rsv1Bit, opText, k, []byte{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}), uint16(4))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole, err1 := feedSplit(data, nil, 1<<16, true)
		part, err2 := feedSplit(data, []int{int(cut) % (len(data) + 1)}, 1<<16, true)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("verdicts differ: %v / %v", err1, err2)
		}
		if err1 == nil && (len(whole.msgs) != len(part.msgs) || len(whole.ctrl) != len(part.ctrl)) {
			t.Fatalf("whole %q %q, cut %q %q", whole.msgs, whole.ctrl, part.msgs, part.ctrl)
		}
		for i := range whole.msgs {
			if err1 == nil && whole.msgs[i] != part.msgs[i] {
				t.Fatalf("message %d differs", i)
			}
			if whole.types[i] == TextMessage && !utf8.ValidString(whole.msgs[i]) {
				t.Fatalf("invalid UTF-8 delivered as text")
			}
		}
	})
}

// FuzzUTF8 checks the incremental validator against unicode/utf8, the
// text fed whole and in two pieces.
func FuzzUTF8(f *testing.F) {
	for _, s := range []string{"", "abc", "κόσμε", "\xce\xba\xe1\xbd", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf0\x9f\x98\x80", "\xc0\xaf", "aaaaaaaa\xffbbbbbbbb"} {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		want := utf8.Valid(b)
		if got := validUTF8(b); got != want {
			t.Fatalf("%q: %v, utf8.Valid %v", b, got, want)
		}
		c := int(cut) % (len(b) + 1)
		var s utf8State
		got := s.write(b[:c]) && s.write(b[c:]) && s.complete()
		if got != want {
			t.Fatalf("%q cut at %d: %v, utf8.Valid %v", b, c, got, want)
		}
		// Failing fast: a prefix that is no valid text's start fails.
		var p utf8State
		if !p.write(b[:c]) && utf8.Valid(b[:c]) {
			t.Fatalf("%q: valid prefix %q refused", b, b[:c])
		}
	})
}
