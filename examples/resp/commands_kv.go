package main

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/uringrt/uringrt/examples/resp/internal/proto"
)

// The commands that write keys: SET with its options and INCR.

// set runs SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|KEEPTTL].
func (s *server) set(cl *client, args [][]byte, out []byte) []byte {
	if len(args) < 3 {
		return arity(out, args)
	}
	var expire int64
	nx, xx, keepTTL, get := false, false, false, false
	for i := 3; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch {
		case opt == "GET":
			get = true
		case opt == "NX" && !xx:
			nx = true
		case opt == "XX" && !nx:
			xx = true
		case opt == "KEEPTTL" && expire == 0:
			keepTTL = true
		case (opt == "EX" || opt == "PX") && expire == 0 && !keepTTL && i+1 < len(args):
			i++
			v, ok := parseInt(args[i])
			if !ok {
				return proto.AppendError(out, "ERR value is not an integer or out of range")
			}
			unit := int64(time.Second)
			if opt == "PX" {
				unit = int64(time.Millisecond)
			}
			if v <= 0 || v > math.MaxInt64/unit {
				return proto.AppendError(out, "ERR invalid expire time in 'set' command")
			}
			expire = nowNano() + v*unit
		default:
			return proto.AppendError(out, "ERR syntax error")
		}
	}
	sh := s.st.lock(args[1])
	if nx || xx || keepTTL || get {
		e := sh.get(args[1], nowNano)
		if get { // the old value is the reply, set or not
			if e != nil {
				out = proto.AppendBulk(out, e.val)
			} else {
				out = proto.AppendNull(out)
			}
		}
		if nx && e != nil || xx && e == nil {
			s.st.unlock(sh)
			if get {
				return out
			}
			return proto.AppendNull(out)
		}
		if keepTTL && e != nil {
			expire = e.expire
		}
	}
	sh.set(args[1], args[2], expire)
	s.st.unlock(sh)
	if expire != 0 && !s.sweeping.Load() {
		s.startSweep(cl)
	}
	if get {
		return out
	}
	return append(out, "+OK\r\n"...)
}

func (s *server) incr(key []byte, out []byte) []byte {
	sh := s.st.lock(key)
	defer s.st.unlock(sh)
	e := sh.get(key, nowNano)
	if e == nil {
		sh.set(key, []byte("1"), 0)
		return proto.AppendInt(out, 1)
	}
	n, ok := parseInt(e.val)
	if !ok {
		return proto.AppendError(out, "ERR value is not an integer or out of range")
	}
	if n == math.MaxInt64 {
		return proto.AppendError(out, "ERR increment or decrement would overflow")
	}
	n++
	if e.lent {
		e.val, e.lent = nil, false
	}
	e.val = strconv.AppendInt(e.val[:0], n, 10)
	return proto.AppendInt(out, n)
}

// parseInt parses a decimal int64 as Redis does: an optional '-', digits,
// nothing else, no overflow.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 || b[0] == '0' { // "-0" too, as Redis's string2ll
			return 0, false
		}
	}
	if len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}
