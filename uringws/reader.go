package uringws

// sink receives what a reader parses.
type sink interface {
	// onMessage gets a whole message; p is valid during the call only.
	onMessage(t MessageType, p []byte)
	// onControl gets a control frame (close, ping, pong) whose payload
	// is valid during the call only; stop ends the reading (a close).
	onControl(op byte, p []byte) (stop bool, err error)
}

// reader is the frame parser and message assembler of one connection,
// used on the loop (fed from OnData) and on a goroutine (fed from
// net.Conn reads). It unmasks payloads in place; an unfragmented message
// whose frame arrived whole is delivered from the input itself, others
// are gathered in a pooled buffer held only while the message is under
// way. A partial frame header or control frame is left unconsumed for the
// caller to join with the next bytes; a data frame's payload is consumed
// as it arrives.
type reader struct {
	maxMsg  int64
	deflate bool // permessage-deflate negotiated: RSV1 marks a compressed message

	// the data frame whose payload is arriving
	inFrame bool
	fin     bool
	pos     uint8 // position in the mask key's cycle
	key     [4]byte
	remain  int64

	// the message under way
	op         byte // opText or opBinary; 0 between messages
	compressed bool
	utf8       utf8State
	size       int64   // payload bytes so far (compressed ones when compressed)
	msg        *[]byte // gathered payload (pooled)
}

// feed parses data: it delivers what is complete to s and returns how
// many bytes it consumed; the rest (a partial header or control frame)
// must be given again, joined with what follows. An error is a protocol
// failure (a *closeError).
func (r *reader) feed(s sink, data []byte) (int, error) {
	n := 0
	for n < len(data) {
		if r.inFrame {
			k := int(min(r.remain, int64(len(data)-n)))
			chunk := data[n : n+k]
			r.pos = uint8(maskBytes(r.key, int(r.pos), chunk))
			if r.op == opText && !r.compressed && !r.utf8.write(chunk) {
				return n, errUTF8
			}
			*r.msg = append(*r.msg, chunk...)
			n += k
			r.remain -= int64(k)
			if r.remain > 0 {
				return n, nil
			}
			r.inFrame = false
			if r.fin {
				if err := r.finish(s); err != nil {
					return n, err
				}
			}
			continue
		}
		h, hn, err := parseHeader(data[n:])
		if err != nil {
			return n, err
		}
		if hn == 0 {
			return n, nil
		}
		if err := r.check(&h); err != nil {
			return n, err
		}
		avail := int64(len(data) - n - hn)
		if h.op >= opClose {
			if avail < h.length {
				return n, nil
			}
			p := data[n+hn : n+hn+int(h.length)]
			maskBytes(h.key, 0, p)
			n += hn + len(p)
			stop, err := s.onControl(h.op, p)
			if err != nil || stop {
				return n, err
			}
			continue
		}
		if r.op == 0 && h.fin && h.rsv == 0 && avail >= h.length {
			// The common case: a whole message in one frame, delivered
			// from the input.
			p := data[n+hn : n+hn+int(h.length)]
			maskBytes(h.key, 0, p)
			n += hn + len(p)
			if h.op == opText && !validUTF8(p) {
				return n, errUTF8
			}
			s.onMessage(MessageType(h.op), p)
			continue
		}
		if h.op != opContinuation {
			r.op, r.compressed, r.utf8, r.size = h.op, h.rsv != 0, utf8State{}, 0
			if r.msg == nil {
				r.msg = getBuf(int(min(h.length, 64<<10)))
			}
		}
		r.size += h.length
		r.inFrame, r.fin, r.key, r.remain, r.pos = true, h.fin, h.key, h.length, 0
		n += hn
		if h.length == 0 {
			r.inFrame = false
			if h.fin {
				if err := r.finish(s); err != nil {
					return n, err
				}
			}
		}
	}
	return n, nil
}

// check applies the rules of RFC 6455 section 5 (and RFC 7692's RSV1) to
// a frame header.
func (r *reader) check(h *header) error {
	if h.rsv != 0 && (h.rsv != rsv1Bit || !r.deflate || (h.op != opText && h.op != opBinary)) {
		return errProto("reserved bits set")
	}
	if !h.masked {
		return errProto("client frame not masked")
	}
	switch h.op {
	case opClose, opPing, opPong:
		if !h.fin {
			return errProto("fragmented control frame")
		}
		if h.length > maxControlPayload {
			return errProto("control frame over 125 bytes")
		}
		return nil
	case opContinuation:
		if r.op == 0 {
			return errProto("continuation frame without a message")
		}
		if r.size+h.length > r.maxMsg || r.size+h.length < 0 {
			return errTooBig
		}
		return nil
	case opText, opBinary:
		if r.op != 0 {
			return errProto("new message inside a fragmented one")
		}
		if h.length > r.maxMsg {
			return errTooBig
		}
		return nil
	}
	return errProto("unknown opcode")
}

// finish delivers the gathered message.
func (r *reader) finish(s sink) error {
	p := *r.msg
	var out *[]byte
	if r.compressed {
		var err error
		out, err = inflate(p, r.maxMsg)
		if err != nil {
			r.reset()
			return err
		}
		p = *out
		if r.op == opText && !validUTF8(p) {
			putBuf(out)
			r.reset()
			return errUTF8
		}
	} else if r.op == opText && !r.utf8.complete() {
		r.reset()
		return errUTF8
	}
	op := r.op
	r.op = 0
	s.onMessage(MessageType(op), p)
	putBuf(out)
	r.reset()
	return nil
}

// reset ends the message under way and gives its buffer back.
func (r *reader) reset() {
	r.op, r.inFrame = 0, false
	putBuf(r.msg)
	r.msg = nil
}
