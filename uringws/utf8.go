package uringws

import "encoding/binary"

// utf8State validates UTF-8 incrementally: a text message's fragments
// are checked as they arrive, and a byte that cannot start or continue a
// valid sequence fails the message at once (RFC 6455 section 8.1), even
// when the sequence began in an earlier fragment. The zero value is the
// state at a message's start.
type utf8State struct {
	need   uint8 // continuation bytes still expected
	lo, hi uint8 // bounds of the next continuation byte
}

// write checks p as the next bytes of the text; false at the first byte
// that makes it invalid.
func (s *utf8State) write(p []byte) bool {
	need, lo, hi := s.need, s.lo, s.hi
	i := 0
	for i < len(p) {
		if need == 0 {
			for i+32 <= len(p) {
				q := p[i : i+32]
				w := binary.LittleEndian.Uint64(q) | binary.LittleEndian.Uint64(q[8:]) |
					binary.LittleEndian.Uint64(q[16:]) | binary.LittleEndian.Uint64(q[24:])
				if w&0x8080808080808080 != 0 {
					break
				}
				i += 32
			}
			for i+8 <= len(p) && binary.LittleEndian.Uint64(p[i:])&0x8080808080808080 == 0 {
				i += 8
			}
			if i == len(p) {
				break
			}
			c := p[i]
			i++
			switch {
			case c < 0x80:
			case c < 0xc2:
				return false
			case c < 0xe0:
				need, lo, hi = 1, 0x80, 0xbf
			case c == 0xe0:
				need, lo, hi = 2, 0xa0, 0xbf
			case c == 0xed:
				need, lo, hi = 2, 0x80, 0x9f // no surrogates
			case c < 0xf0:
				need, lo, hi = 2, 0x80, 0xbf
			case c == 0xf0:
				need, lo, hi = 3, 0x90, 0xbf
			case c < 0xf4:
				need, lo, hi = 3, 0x80, 0xbf
			case c == 0xf4:
				need, lo, hi = 3, 0x80, 0x8f // up to U+10FFFF
			default:
				return false
			}
			continue
		}
		c := p[i]
		i++
		if c < lo || c > hi {
			return false
		}
		need--
		lo, hi = 0x80, 0xbf
	}
	s.need, s.lo, s.hi = need, lo, hi
	return true
}

// complete reports whether the text so far ends on a character boundary.
func (s *utf8State) complete() bool { return s.need == 0 }

// validUTF8 checks a whole text.
func validUTF8(p []byte) bool {
	var s utf8State
	return s.write(p) && s.complete()
}
