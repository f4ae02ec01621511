package uringws

import (
	"encoding/binary"
	"math/bits"
)

// MessageType is a WebSocket message's opcode (RFC 6455 section 5.2), with
// gorilla/websocket's values.
type MessageType int

// The message types. TextMessage payloads are UTF-8; BinaryMessage ones
// are anything. PingMessage and PongMessage may be written by
// WriteMessage (at most 125 bytes); close frames go through Conn.Close.
const (
	TextMessage   MessageType = 1
	BinaryMessage MessageType = 2
	CloseMessage  MessageType = 8
	PingMessage   MessageType = 9
	PongMessage   MessageType = 10
)

const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa

	finBit  = 0x80
	rsv1Bit = 0x40
	rsvBits = 0x70
	maskBit = 0x80

	maxControlPayload = 125
	maxHeaderSize     = 14 // 2 + 8 (length) + 4 (mask key)
)

// header is a parsed frame header.
type header struct {
	fin    bool
	rsv    byte // the three RSV bits, in place (0x70 mask)
	op     byte
	masked bool
	key    [4]byte
	length int64
}

// parseHeader parses the frame header at the start of b. It returns the
// header's size, or 0 when b holds only part of it. A length with its
// most significant bit set (past 2^63-1) is a protocol error.
func parseHeader(b []byte) (h header, n int, err error) {
	if len(b) < 2 {
		return h, 0, nil
	}
	b0, b1 := b[0], b[1]
	h.fin = b0&finBit != 0
	h.rsv = b0 & rsvBits
	h.op = b0 & 0x0f
	h.masked = b1&maskBit != 0
	n = 2
	switch l := b1 & 0x7f; l {
	case 126:
		if len(b) < 4 {
			return h, 0, nil
		}
		h.length = int64(binary.BigEndian.Uint16(b[2:]))
		n = 4
	case 127:
		if len(b) < 10 {
			return h, 0, nil
		}
		v := binary.BigEndian.Uint64(b[2:])
		if v>>63 != 0 {
			return h, 0, errProto("frame length past 2^63-1")
		}
		h.length = int64(v)
		n = 10
	default:
		h.length = int64(l)
	}
	if h.masked {
		if len(b) < n+4 {
			return h, 0, nil
		}
		copy(h.key[:], b[n:n+4])
		n += 4
	}
	return h, n, nil
}

// appendHeader appends an unmasked (server) frame header for a payload
// of n bytes.
func appendHeader(dst []byte, fin bool, rsv byte, op byte, n int) []byte {
	b0 := op | rsv
	if fin {
		b0 |= finBit
	}
	switch {
	case n <= 125:
		return append(dst, b0, byte(n))
	case n <= 0xffff:
		return append(dst, b0, 126, byte(n>>8), byte(n))
	default:
		dst = append(dst, b0, 127)
		return binary.BigEndian.AppendUint64(dst, uint64(n))
	}
}

// headerSize is the size of a server frame header for n payload bytes.
func headerSize(n int) int {
	switch {
	case n <= 125:
		return 2
	case n <= 0xffff:
		return 4
	default:
		return 10
	}
}

// maskBytes XORs b in place with the masking key, starting pos bytes into
// the key's cycle, and returns the position after b. It works a 64-bit
// word at a time.
func maskBytes(key [4]byte, pos int, b []byte) int {
	pos &= 3
	if len(b) >= 16 {
		k := binary.LittleEndian.Uint32(key[:])
		k = bits.RotateLeft32(k, -8*pos)
		k64 := uint64(k) | uint64(k)<<32
		for len(b) >= 32 {
			v0 := binary.LittleEndian.Uint64(b) ^ k64
			v1 := binary.LittleEndian.Uint64(b[8:]) ^ k64
			v2 := binary.LittleEndian.Uint64(b[16:]) ^ k64
			v3 := binary.LittleEndian.Uint64(b[24:]) ^ k64
			binary.LittleEndian.PutUint64(b, v0)
			binary.LittleEndian.PutUint64(b[8:], v1)
			binary.LittleEndian.PutUint64(b[16:], v2)
			binary.LittleEndian.PutUint64(b[24:], v3)
			b = b[32:]
		}
		for len(b) >= 8 {
			binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)^k64)
			b = b[8:]
		}
	}
	for i := range b {
		b[i] ^= key[pos&3]
		pos++
	}
	return pos & 3
}
