// Package wsconform is a WebSocket server conformance suite: the cases of the
// Autobahn testsuite's fuzzing client (sections 1-7, 9, 10, 12 and 13),
// written from their descriptions. A client of its own writes every frame
// (masked, chopped into the byte pieces a case asks for), watches what the
// server sends back and gives each case a verdict as Autobahn does: OK,
// NON-STRICT, INFORMATIONAL, UNIMPLEMENTED or FAILED.
package wsconform

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
)

// WebSocket opcodes (RFC 6455 section 5.2).
const (
	OpCont   = 0x0
	OpText   = 0x1
	OpBinary = 0x2
	OpClose  = 0x8
	OpPing   = 0x9
	OpPong   = 0xA
)

// Reserved bits as they sit in a frame's first byte, shifted down by 4.
const (
	RSV1 = 4
	RSV2 = 2
	RSV3 = 1
)

// Frame is one frame as the suite's client writes it.
type Frame struct {
	Fin     bool
	RSV     byte // 0-7: RSV1<<2 | RSV2<<1 | RSV3
	Op      byte
	Payload []byte
}

// Encode returns the frame's wire bytes, masked with a random key as a
// client must (RFC 6455 section 5.3).
func (f Frame) Encode() []byte {
	n := len(f.Payload)
	b := make([]byte, 0, 14+n)
	b0 := f.Op&0xF | (f.RSV&7)<<4
	if f.Fin {
		b0 |= 0x80
	}
	b = append(b, b0)
	switch {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n <= 0xFFFF:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], rand.Uint32())
	b = append(b, key[:]...)
	off := len(b)
	b = append(b, f.Payload...)
	for i := range n {
		b[off+i] ^= key[i&3]
	}
	return b
}

// CloseFrame returns a close frame with code and reason; code 0 sends an
// empty payload.
func CloseFrame(code int, reason string) Frame {
	return Frame{Fin: true, Op: OpClose, Payload: ClosePayload(code, reason)}
}

// ClosePayload encodes a close frame's payload; code 0 gives an empty one.
func ClosePayload(code int, reason string) []byte {
	if code == 0 {
		return nil
	}
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}

// Msg is a whole unfragmented frame of opcode op.
func Msg(op byte, payload []byte) Frame { return Frame{Fin: true, Op: op, Payload: payload} }

// Frames encodes fs back to back.
func Frames(fs ...Frame) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, f.Encode()...)
	}
	return b
}

// serverFrame is one frame the server sent.
type serverFrame struct {
	fin     bool
	rsv     byte
	op      byte
	payload []byte
}

// errServerFrame marks a frame no server may send: the server is at fault.
var errServerFrame = errors.New("bad frame from the server")

// maxServerFrame bounds what the suite reads in one frame (largest case: 1 MiB).
const maxServerFrame = 64 << 20

// readFrame reads one server frame; a masked frame or one longer than
// maxServerFrame is an error wrapping errServerFrame.
func readFrame(br *bufio.Reader) (serverFrame, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return serverFrame{}, err
	}
	f := serverFrame{fin: h[0]&0x80 != 0, rsv: h[0] >> 4 & 7, op: h[0] & 0xF}
	if h[1]&0x80 != 0 {
		return f, fmt.Errorf("%w: masked", errServerFrame)
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var e [2]byte
		if _, err := io.ReadFull(br, e[:]); err != nil {
			return f, err
		}
		n = uint64(binary.BigEndian.Uint16(e[:]))
	case 127:
		var e [8]byte
		if _, err := io.ReadFull(br, e[:]); err != nil {
			return f, err
		}
		n = binary.BigEndian.Uint64(e[:])
	}
	if n > maxServerFrame {
		return f, fmt.Errorf("%w: length %d", errServerFrame, n)
	}
	f.payload = make([]byte, n)
	_, err := io.ReadFull(br, f.payload)
	return f, err
}
