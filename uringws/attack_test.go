package uringws

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// lengthFrame is a masked client frame header announcing n payload bytes
// in the 64-bit form, with none of them sent.
func lengthFrame(op byte, n uint64) []byte {
	b := binary.BigEndian.AppendUint64([]byte{finBit | op, maskBit | 127}, n)
	return append(b, testKey[:]...)
}

// TestAttackFramesAgainstGorilla sends hostile frames to uringws (on the
// loop, on BackendStd and on net/http) and to gorilla/websocket's server
// and compares what a client sees: the frames and the close code. Where
// gorilla is laxer than RFC 6455 (it leaves UTF-8 to the application,
// drops the connection without a close frame at a length past 2^63-1 or
// a message past its limit in a continuation, answers a 1-byte close as
// an empty one) uringws must give the stricter answer in stricter below.
func TestAttackFramesAgainstGorilla(t *testing.T) {
	k := testKey
	cat := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	last := clientFrame(true, 0, opPing, k, []byte("last"))
	// A 5-byte ping whose length is written in the 16-bit form.
	longForm := append([]byte{finBit | opPing, maskBit | 126, 0, 5}, k[:]...)
	longForm = append(longForm, clientFrame(true, 0, opPing, k, []byte("hello"))[6:]...)
	cases := map[string][]byte{
		"length 2^63":            lengthFrame(opBinary, 1<<63),
		"length 2^64-1":          lengthFrame(opBinary, 1<<64-1),
		"length 2^63-1":          lengthFrame(opBinary, 1<<63-1),
		"length 2^62":            lengthFrame(opBinary, 1<<62),
		"length 2^32":            lengthFrame(opText, 1<<32),
		"continuation 2^63-1":    cat(clientFrame(false, 0, opBinary, k, []byte("a")), lengthFrame(opContinuation, 1<<63-1)),
		"unmasked after masked":  cat(clientFrame(true, 0, opText, k, []byte("ok")), []byte{finBit | opText, 1, 'a'}),
		"unmasked ping":          []byte{finBit | opPing, 0},
		"unmasked close":         []byte{finBit | opClose, 2, 3, 0xe8},
		"ping of 126 bytes":      clientFrame(true, 0, opPing, k, make([]byte, 126)),
		"close of 126 bytes":     clientFrame(true, 0, opClose, k, closePayload(1000, string(make([]byte, 124)))),
		"ping 125 bytes":         cat(clientFrame(true, 0, opPing, k, bytes.Repeat([]byte("p"), 125)), last),
		"ping in 16-bit form":    cat(longForm, last),
		"fragmented pong":        clientFrame(false, 0, opPong, k, []byte("x")),
		"continuation first":     clientFrame(false, 0, opContinuation, k, []byte("x")),
		"empty continuation":     clientFrame(true, 0, opContinuation, k, nil),
		"close of 1 byte":        clientFrame(true, 0, opClose, k, []byte{3}),
		"close 1006":             clientFrame(true, 0, opClose, k, closePayload(1006, "")),
		"close 1015":             clientFrame(true, 0, opClose, k, closePayload(1015, "")),
		"close 1016":             clientFrame(true, 0, opClose, k, closePayload(1016, "")),
		"close 0":                clientFrame(true, 0, opClose, k, closePayload(0, "")),
		"close 65535":            clientFrame(true, 0, opClose, k, closePayload(65535, "")),
		"close reason bad utf8":  clientFrame(true, 0, opClose, k, closePayload(1000, "ok\xc0\xaf")),
		"close reason cut utf8":  clientFrame(true, 0, opClose, k, closePayload(1000, "\xce")),
		"rsv1 not negotiated":    clientFrame(true, rsv1Bit, opText, k, deflateRaw([]byte("x"))),
		"rsv1 bomb not offered":  clientFrame(true, rsv1Bit, opBinary, k, deflateRaw(make([]byte, 1<<20))),
		"rsv1 on ping":           clientFrame(true, rsv1Bit, opPing, k, nil),
		"text split bad utf8":    cat(clientFrame(false, 0, opText, k, []byte{0xe2, 0x82}), clientFrame(true, 0, opContinuation, k, []byte{0x28})),
		"text ends mid-rune":     clientFrame(true, 0, opText, k, []byte{'a', 0xe2, 0x82}),
		"at the size limit":      cat(clientFrame(true, 0, opBinary, k, make([]byte, 4096)), last),
		"one past the limit":     clientFrame(true, 0, opBinary, k, make([]byte, 4097)),
		"fragments to the limit": cat(clientFrame(false, 0, opBinary, k, make([]byte, 4000)), clientFrame(true, 0, opContinuation, k, make([]byte, 96)), last),
		"fragments past limit":   cat(clientFrame(false, 0, opBinary, k, make([]byte, 4000)), clientFrame(true, 0, opContinuation, k, make([]byte, 97))),
		"data after close":       cat(clientFrame(true, 0, opClose, k, closePayload(1000, "")), clientFrame(true, 0, opText, k, []byte("late"))),
	}
	stricter := map[string]string{
		"length 2^63":           "close 1002",
		"length 2^64-1":         "close 1002",
		"continuation 2^63-1":   "close 1009",
		"close of 1 byte":       "close 1002",
		"close reason bad utf8": "close 1007",
		"close reason cut utf8": "close 1007",
		"text split bad utf8":   "close 1007",
		"text ends mid-rune":    "close 1007",
		// A length in a longer form than needed is accepted (gorilla
		// refuses a control frame whose 7-bit length field says 126).
		"ping in 16-bit form": `10/true/"hello" 10/true/"last" `,
	}
	theirs := serveOne(t, "net/http", gorillaEcho(4096))
	want := map[string]string{}
	for name, in := range cases {
		want[name] = transcript(t, theirs.addr, in)
		if w, ok := stricter[name]; ok {
			if want[name] == w {
				t.Errorf("%s: gorilla now answers %s as uringws does; move it out of stricter", name, w)
			}
			want[name] = w
		}
	}
	for _, ours := range serveAll(t, upgradeHandler(&Upgrader{MaxMessageSize: 4096}, echoHandler)) {
		for name, in := range cases {
			if got := transcript(t, ours.addr, in); got != want[name] {
				t.Errorf("%s %s:\n uringws: %s\n gorilla: %s", ours.name, name, got, want[name])
			}
		}
	}
}
