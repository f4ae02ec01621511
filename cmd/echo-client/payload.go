package main

import (
	"encoding/binary"
	"fmt"
)

// Payloads are deterministic from the connection id and the sequence number:
// a per-connection pattern whose first (and, for messages of 16 bytes or
// more, last) 8 bytes are replaced by a stamp of (id, seq). Producing or
// expecting message seq costs two 8-byte stores, and checking an echo is one
// bytes.Equal over the whole message, so every byte is verified.

// mix64 is the splitmix64 finaliser.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// newPattern returns the size-byte pattern of connection id.
func newPattern(id, size int) []byte {
	p := make([]byte, size+8)
	s := mix64(uint64(id) << 32)
	for i := 0; i < size; i += 8 {
		s = mix64(s)
		binary.LittleEndian.PutUint64(p[i:], s)
	}
	return p[:size:size]
}

// stamp turns buf, which holds the connection's pattern, into message seq.
func stamp(buf []byte, id int, seq uint64) {
	v := mix64(uint64(id)<<40 ^ seq)
	if len(buf) >= 8 {
		binary.LittleEndian.PutUint64(buf, v)
	} else {
		for i := range buf {
			buf[i] = byte(v >> (8 * i))
		}
	}
	if len(buf) >= 16 {
		binary.LittleEndian.PutUint64(buf[len(buf)-8:], ^v)
	}
}

// mismatch describes how got differs from want (same length).
func mismatch(got, want []byte) string {
	for i := range want {
		if got[i] != want[i] {
			return fmt.Sprintf("at byte %d of %d: got 0x%02x, want 0x%02x", i, len(want), got[i], want[i])
		}
	}
	return "no difference"
}
