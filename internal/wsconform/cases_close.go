package wsconform

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// closeWith sends fs, the first a close frame, and wants no further
// observation and the server's close with one of codes.
func closeWith(id, desc string, codes []int, fs ...Frame) Case {
	return Case{ID: id, Desc: desc, Run: func(s *Client) Expect {
		s.mu.Lock()
		s.closeSent = true
		s.mu.Unlock()
		s.SendFrames(0, false, fs...)
		return Expect{Codes: codes}
	}}
}

func rawClose(p []byte) Frame { return Frame{Fin: true, Op: OpClose, Payload: p} }

func codePayload(code int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(code)) }

// Section7 is the close handshake and close codes.
func Section7() []Case {
	hello := []byte("Hello World!")
	normal := []int{1000}
	cs := []Case{
		{ID: "7.1.1", Desc: "text, then a clean close", Run: func(s *Client) Expect {
			s.SendFrames(0, false, Msg(OpText, hello))
			return Expect{OK: []Obs{Text(hello)}}
		}},
		closeWith("7.1.2", "close twice", normal, CloseFrame(1000, ""), CloseFrame(1000, "")),
		closeWith("7.1.3", "close, then a ping: no pong", normal, CloseFrame(1000, ""), Msg(OpPing, hello)),
		closeWith("7.1.4", "close, then text: no echo", normal, CloseFrame(1000, ""), Msg(OpText, hello)),
		closeWith("7.1.5", "text fragment, close, continuation: no echo", normal,
			frag(OpText, false, "fragment1"), CloseFrame(1000, ""), frag(OpCont, true, "fragment2")),
		{ID: "7.1.6", Desc: "256 KiB text, close, ping, back to back", Run: func(s *Client) Expect {
			s.mu.Lock()
			s.closeSent = true
			s.mu.Unlock()
			s.SendFrames(0, false, Msg(OpText, repeat('B', 256<<10)), CloseFrame(1000, ""), Msg(OpPing, hello))
			return Expect{Informational: true, Codes: normal}
		}},
		closeWith("7.3.1", "close with an empty payload", []int{1000, 1005}, rawClose(nil)),
		failCase("7.3.2", "close with a 1-byte payload", 0, false, nil, rawClose([]byte{'a'})),
		closeWith("7.3.3", "close 1000 without reason", normal, CloseFrame(1000, "")),
		closeWith("7.3.4", "close 1000 with a reason", normal, CloseFrame(1000, "Hello World!")),
		closeWith("7.3.5", "close 1000 with a 123-byte reason", normal, CloseFrame(1000, strings.Repeat("*", 123))),
		failCase("7.3.6", "close 1000 with a 124-byte reason (payload 126)", 0, false, nil,
			CloseFrame(1000, strings.Repeat("*", 124))),
		{ID: "7.5.1", Desc: "close 1000 with a reason that is not UTF-8", Run: func(s *Client) Expect {
			s.SendFrames(0, false, rawClose(append(codePayload(1000), "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80\x65\x64\x69\x74\x65\x64"...)))
			return Expect{Fail: true, Codes: []int{1002, 1007}}
		}},
	}
	for i, code := range []int{1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999} {
		cs = append(cs, closeWith(fmt.Sprintf("7.7.%d", i+1), fmt.Sprintf("close with valid code %d", code),
			[]int{code, 1000}, rawClose(codePayload(code))))
	}
	for i, code := range []int{0, 999, 1004, 1005, 1006, 1016, 1100, 2000, 2999} {
		cs = append(cs, failCase(fmt.Sprintf("7.9.%d", i+1), fmt.Sprintf("close with invalid code %d", code),
			0, false, nil, rawClose(codePayload(code))))
	}
	for i, code := range []int{5000, 65535} {
		cs = append(cs, failCase(fmt.Sprintf("7.13.%d", i+1), fmt.Sprintf("close with invalid code %d", code),
			0, false, nil, rawClose(codePayload(code))))
	}
	return cs
}

// sizeName is 64K, 1M and so on.
func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}

// roundTrips sends count messages of size bytes, each after the echo of
// the one before.
func roundTrips(id string, op byte, size, count int) Case {
	return Case{ID: id, Desc: fmt.Sprintf("%d messages of %s, one at a time", count, sizeName(size)), Run: func(s *Client) Expect {
		p := repeat(map[byte]byte{OpText: '*', OpBinary: 0xfe}[op], size)
		var want []Obs
		start := time.Now()
		for i := range count {
			s.SendFrames(0, false, Msg(op, p))
			want = append(want, obsOf(op, p))
			if !s.WaitObs(i+1, 10*time.Second) {
				break
			}
		}
		return Expect{OK: want, Note: time.Since(start).Round(time.Millisecond).String()}
	}}
}

// Section9 is limits and performance, message sizes capped at 1 MiB.
func Section9() []Case {
	var cs []Case
	sizes := []int{64 << 10, 256 << 10, 1 << 20}
	frags := []int{64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}
	chops := []int{64, 128, 256, 512, 1024, 2048}
	for k, op := range []byte{OpText, OpBinary} {
		kind := map[byte]string{OpText: "text", OpBinary: "binary"}[op]
		fill := map[byte]byte{OpText: '*', OpBinary: 0xfe}[op]
		for i, n := range sizes {
			cs = append(cs, echoCase(fmt.Sprintf("9.%d.%d", 1+k, i+1), kind+" message of "+sizeName(n), op, repeat(fill, n), 0))
		}
		for i, f := range frags {
			id := fmt.Sprintf("9.%d.%d", 3+k, i+1)
			p := repeat(fill, 1<<20)
			cs = append(cs, Case{ID: id, Desc: kind + " 1M in fragments of " + sizeName(f), Run: func(s *Client) Expect {
				s.SendMessage(op, p, f)
				return Expect{OK: []Obs{obsOf(op, p)}}
			}})
		}
		for i, c := range chops {
			cs = append(cs, echoCase(fmt.Sprintf("9.%d.%d", 5+k, i+1), kind+" 1M in chops of "+sizeName(c), op, repeat(fill, 1<<20), c))
		}
		for i, n := range []int{0, 16, 64, 256, 1 << 10, 4 << 10} {
			cs = append(cs, roundTrips(fmt.Sprintf("9.%d.%d", 7+k, i+1), op, n, 1000))
		}
	}
	return cs
}

// Section10 is miscellaneous: a message the client fragments itself.
func Section10() []Case {
	p := repeat('*', 65536)
	return []Case{{ID: "10.1.1", Desc: "text of 64K in frames of 1300", Run: func(s *Client) Expect {
		s.SendMessage(OpText, p, 1300)
		return Expect{OK: []Obs{Text(p)}}
	}}}
}
